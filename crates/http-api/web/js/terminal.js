// The Terminal panel: a shell on the server (POST /pty) over its WebSocket (GET /pty/{id}/connect,
// with a single-use ticket). A line terminal: output is shown as text with escape sequences
// removed, input is sent a line at a time (Ctrl+C as a button). Full-screen programs (editors,
// pagers) do not render: there is no screen emulation.

import { h, replace } from './dom.js';
import { post, del, scoped } from './api.js';

// CSI sequences, OSC sequences (to BEL or ST), and other two-character escapes.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
const MAX_TEXT = 200000;

export function createTerminal(root, actions) {
  const screen = h('pre.term-screen', { tabindex: 0 });
  const line = h('input#term-input', { placeholder: 'command, then Enter', spellcheck: 'false', 'aria-label': 'Terminal input' });
  const interrupt = h('button.ghost', { type: 'button', title: 'Send Ctrl+C' }, '^C');
  const close = h('button.ghost', { type: 'button', title: 'Close (Alt+J)' }, '✕');
  const state = h('span.term-state', null, '');
  root.append(h('div.review-head', null, h('strong', null, 'Terminal'), state, h('span.grow'), interrupt, close),
    screen, h('div.term-line', null, h('span.prompt', null, '›'), line));
  close.addEventListener('click', () => actions.toggle(false));
  let socket = null;
  let pty = null;
  let text = '';

  function write(chunk) {
    let out = chunk.replace(ESCAPES, '').replace(/\r\n/g, '\n');
    // A lone carriage return starts the line again (progress bars); a backspace removes a character.
    for (const ch of out) {
      if (ch === '\r') text = text.slice(0, text.lastIndexOf('\n') + 1);
      else if (ch === '\b') text = text.slice(0, -1);
      else if (ch >= ' ' || ch === '\n' || ch === '\t') text += ch;
    }
    if (text.length > MAX_TEXT) text = text.slice(text.length - MAX_TEXT);
    screen.textContent = text;
    screen.scrollTop = screen.scrollHeight;
  }

  function send(data) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(data);
  }

  line.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      send(line.value + '\r');
      line.value = '';
    } else if (e.key === 'c' && e.ctrlKey) {
      e.preventDefault();
      send('\x03');
    }
  });
  interrupt.addEventListener('click', () => send('\x03'));

  async function start() {
    if (socket) return;
    state.textContent = 'starting…';
    try {
      pty = await post('/pty', { title: 'web' });
      const { ticket } = await post(`/pty/${pty.id}/connect-token`);
      const url = new URL(scoped(`/pty/${pty.id}/connect?cursor=0&ticket=${encodeURIComponent(ticket)}`), location.href);
      url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
      socket = new WebSocket(url);
      socket.binaryType = 'arraybuffer';
      socket.onopen = () => { state.textContent = ''; line.focus(); };
      socket.onmessage = (m) => { if (typeof m.data === 'string') write(m.data); };
      socket.onclose = () => {
        state.textContent = 'ended';
        socket = null;
        pty = null;
      };
    } catch (err) {
      state.textContent = '';
      socket = null;
      actions.error(err);
    }
  }

  return {
    /** Opens a shell the first time the panel is shown. */
    show() {
      if (!root.hidden) {
        start();
        line.focus();
      }
    },
    /** Ends the shell (the panel's project changed). */
    async stop() {
      const id = pty && pty.id;
      if (socket) socket.close();
      socket = null;
      pty = null;
      text = '';
      replace(screen);
      if (id) await del(`/pty/${id}`).catch(() => {});
    },
  };
}
