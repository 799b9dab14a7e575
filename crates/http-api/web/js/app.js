// The web UI's entry: wires the views to the state, the API and the /event stream; routing by
// `#/session/<id>` (so the server's paths stay the API's); theme, shortcuts, toasts, reconnection.

import { h, replace, fmtNumber, fmtCost } from './dom.js';
import { get, getServer, post, patch, del, follow, setDirectory } from './api.js';
import { state, reduce, load, thread, isBusy, totals } from './state.js';
import { createSidebar } from './sidebar.js';
import { createTimeline } from './timeline.js';
import { createComposer } from './composer.js';
import { createDock } from './dock.js';
import { createReview } from './review.js';
import { createFiles } from './files.js';
import { createTerminal } from './terminal.js';
import { diffView } from './markdown.js';
import { todoList, errorText } from './parts.js';

const $ = (id) => document.getElementById(id);

const sidebar = createSidebar($('sidebar'), {
  project: (dir) => switchProject(dir),
  create: () => newSession(),
  open: (id) => go(id),
  rename: (id, title) => attempt(async () => {
    const info = await patch(`/session/${id}`, { title });
    state.sessions.set(info.id, info);
    sidebar.draw();
    drawHeader();
  }),
  fork: (id) => attempt(async () => {
    const info = await post(`/session/${id}/fork`, {});
    state.sessions.set(info.id, info);
    go(info.id);
  }),
  remove: (id) => attempt(async () => {
    await del(`/session/${id}`);
    state.sessions.delete(id);
    if (state.current === id) go(null);
    sidebar.draw();
  }),
});
const timeline = createTimeline($('timeline'), { revert: (id) => revert(id) });
const composer = createComposer($('composer'), { send, command, interrupt, error: toast });
const dock = createDock($('dock'), {
  reply: (id, reply, message) => attempt(async () => {
    await post(`/permission/${id}/reply`, message && reply === 'reject' ? { reply, message } : { reply });
    state.permissions.delete(id);
    dock.draw();
  }),
  answer: (id, answers) => attempt(async () => {
    await post(`/question/${id}/reply`, { answers });
    state.questions.delete(id);
    dock.draw();
  }),
  dismiss: (id) => attempt(async () => {
    await post(`/question/${id}/reject`);
    state.questions.delete(id);
    dock.draw();
  }),
  diff: diffView,
});
const review = createReview($('review'), { toggle: (on) => toggleReview(on) });
const files = createFiles($('files'), { toggle: (on) => toggleFiles(on), error: toast });
const terminal = createTerminal($('terminal'), { toggle: (on) => toggleTerminal(on), error: toast });

// ---- errors and notices

function toast(err) {
  const text = err instanceof Error ? err.message : String(err);
  const el = h('div.toast', null, text);
  $('toasts').append(el);
  setTimeout(() => el.remove(), 8000);
}

async function attempt(fn) {
  try {
    await fn();
    return true;
  } catch (err) {
    toast(err);
    return false;
  }
}

// ---- sessions

async function newSession() {
  return attempt(async () => {
    const info = await post('/session', {});
    state.sessions.set(info.id, info);
    await go(info.id);
    composer.focus();
  });
}

function go(id) {
  const hash = id ? `#/session/${id}` : '#/';
  if (location.hash !== hash) location.hash = hash;
  else return open(id);
}

async function open(id) {
  state.current = id;
  composer.open(id);
  if (!id) {
    timeline.show(null);
    drawAll();
    return;
  }
  thread(id);
  timeline.show(id);
  drawAll();
  try {
    const [info, messages, todos] = await Promise.all([
      get(`/session/${id}`), get(`/session/${id}/message`), get(`/session/${id}/todo`).catch(() => []),
    ]);
    if (state.current !== id) return;
    state.sessions.set(id, info);
    load(id, messages);
    state.todos.set(id, todos || []);
    timeline.show(id);
    drawAll();
  } catch (err) {
    toast(err);
    // A session that is gone (deleted elsewhere, a stale link) is not left open.
    if (err.status === 404 && state.current === id) go(null);
  }
  // The prompt gets the focus unless the user moved it meanwhile (renaming a session, searching).
  const typing = document.activeElement?.matches?.('input, textarea, select');
  if (!typing || document.activeElement === composer.input) composer.focus();
}

function route() {
  const m = location.hash.match(/^#\/session\/([\w-]+)/);
  open(m ? m[1] : null);
}

/** The open session, created first when there is none. */
async function ensureSession() {
  if (state.current) return state.current;
  const info = await post('/session', {});
  state.sessions.set(info.id, info);
  history.replaceState(null, '', `#/session/${info.id}`);
  await open(info.id);
  return info.id;
}

async function send(text, agent, model, files = [], variant) {
  return attempt(async () => {
    const id = await ensureSession();
    const body = { parts: text ? [{ type: 'text', text }] : [] };
    for (const f of files) body.parts.push({ type: 'file', mime: f.mime, filename: f.filename, url: f.url });
    if (agent) body.agent = agent;
    if (model) body.model = model;
    if (variant) body.variant = variant;
    const running = isBusy(id);
    await post(`/session/${id}/prompt_async`, body);
    if (running && text) {
      // The runtime takes it at its next boundary; until then it waits here.
      if (!state.queued.has(id)) state.queued.set(id, []);
      state.queued.get(id).push(text);
      drawAll();
    }
    composer.remember();
    timeline.scrollToEnd();
  });
}

/** A `/command`: the server expands it and prompts; the reply streams in like any other. */
async function command(name, args, agent, model) {
  return attempt(async () => {
    const id = await ensureSession();
    const body = { command: name, arguments: args || '' };
    if (agent) body.agent = agent;
    if (model) body.model = `${model.providerID}/${model.modelID}`;
    // The route answers when the turn ends; its events show the progress meanwhile.
    post(`/session/${id}/command`, body).catch(toast);
    composer.remember();
  });
}

function interrupt() {
  const id = state.current;
  if (id && isBusy(id)) attempt(() => post(`/session/${id}/abort`));
}

async function revert(messageID) {
  const id = state.current;
  await attempt(async () => {
    const info = await post(`/session/${id}/revert`, { messageID });
    state.sessions.set(id, info);
    timeline.show(id);
    drawAll();
  });
}

async function unrevert() {
  const id = state.current;
  await attempt(async () => {
    const info = await post(`/session/${id}/unrevert`);
    state.sessions.set(id, info);
    timeline.show(id);
    drawAll();
  });
}

// ---- drawing what is not a view of its own

/** Publishes the session's read-only transcript (the server's /share/{id}), or withdraws it. */
async function share(on) {
  const id = state.current;
  await attempt(async () => {
    const info = on ? await post(`/session/${id}/share`) : await del(`/session/${id}/share`);
    state.sessions.set(id, info);
    drawAll();
  });
}

function drawShare(s) {
  const box = $('share');
  if (!s) return replace(box);
  if (s.share && s.share.url) {
    const stop = h('button#unshare.ghost', { type: 'button', title: 'Withdraw the transcript' }, 'Unshare');
    stop.addEventListener('click', () => share(false));
    return replace(box, h('a#share-link', { href: s.share.url, target: '_blank', rel: 'noopener noreferrer' }, 'Shared ↗'), stop);
  }
  const start = h('button#share-session.ghost', { type: 'button', title: 'Publish a read-only transcript on this server' }, 'Share');
  start.addEventListener('click', () => share(true));
  replace(box, start);
}

function drawHeader() {
  const s = state.sessions.get(state.current);
  drawShare(s);
  $('title').textContent = s ? s.title || 'New session' : 'New session';
  const t = totals(state.current);
  $('usage').textContent = s && (t.input || t.output)
    ? `${fmtNumber(t.context)} context · ${fmtNumber(t.output)} out · ${fmtCost(t.cost)}` : '';
  composer.busy(isBusy(state.current));
  document.body.classList.toggle('busy', isBusy(state.current));
}

function drawBottom() {
  const s = state.sessions.get(state.current);
  const bar = $('revert');
  if (s && s.revert && s.revert.messageID) {
    const t = state.threads.get(s.id);
    const hidden = t ? t.order.length - t.visible(s).length : 0;
    const restore = h('button#unrevert', { type: 'button' }, 'Restore');
    restore.addEventListener('click', unrevert);
    replace(bar, h('span', null, `${hidden} message(s) reverted; the next prompt discards them.`), restore);
    bar.hidden = false;
  } else bar.hidden = true;
  const queued = state.queued.get(state.current) || [];
  $('queued').hidden = !queued.length;
  replace($('queued'), queued.map((text) => h('div.queued-item', null, h('span.tag', null, 'queued'), h('span', null, text))));
  const todos = state.todos.get(state.current) || [];
  const open = todos.filter((t) => t.status !== 'completed' && t.status !== 'cancelled');
  $('todos').hidden = !open.length;
  if (open.length) replace($('todos'), h('div.todos-head', null, `Todo ${todos.length - open.length}/${todos.length}`), todoList(todos));
}

let frame = 0;
let sidebarDirty = true;
/** Redraws, once per frame, what is not a view of its own; the sidebar only when asked. */
function drawAll(withSidebar = true) {
  if (withSidebar) sidebarDirty = true;
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    if (sidebarDirty) sidebar.draw();
    sidebarDirty = false;
    drawHeader();
    drawBottom();
    dock.draw();
  });
}

// ---- the event stream and resynchronisation

async function sync() {
  await attempt(async () => {
    const [path, sessions, status, permissions, questions, projects, server] = await Promise.all([
      get('/path'), get('/session'), get('/session/status'), get('/permission'), get('/question'),
      get('/project').catch(() => []), getServer('/path'),
    ]);
    state.projects = projects || [];
    state.serverDirectory = server.directory || '';
    state.questions = new Map((questions || []).map((q) => [q.id, q]));
    state.directory = path.directory || '';
    state.sessions = new Map(sessions.map((s) => [s.id, s]));
    state.status = new Map(Object.entries(status || {}));
    state.permissions = new Map((permissions || []).map((p) => [p.id, p]));
    drawAll();
  });
  attempt(async () => {
    const [agents, providers, commands] = await Promise.all([get('/agent'), get('/config/providers'), get('/command')]);
    state.agents = agents || [];
    state.commands = (commands || []).sort((a, b) => a.name.localeCompare(b.name));
    state.models = [];
    for (const p of providers.providers || []) {
      for (const m of Object.values(p.models || {})) state.models.push({ providerID: p.id, modelID: m.id, name: m.name, variants: Object.keys(m.variants || {}) });
    }
    const defaults = providers.default || {};
    const first = Object.keys(defaults)[0];
    state.defaultModel = first ? `${first}/${defaults[first]}` : null;
    composer.pickers();
  });
}

/** Shows another project: its sessions, agents, commands and events. */
async function switchProject(dir) {
  sessionStorage.setItem('directory', dir);
  setDirectory(dir);
  state.sessions.clear();
  state.threads.clear();
  state.current = null;
  stream.restart();
  await sync();
  go(null);
  files.stale();
  review.load();
  terminal.stop().then(() => terminal.show());
}
setDirectory(sessionStorage.getItem('directory'));

let connected = false;
let everConnected = false;
const stream = follow((event) => {
  if (event.type === 'server.connected') {
    if (everConnected) {
      sync().then(() => state.current && open(state.current));
    }
    everConnected = true;
    return;
  }
  const ch = reduce(event);
  const current = state.current;
  if (ch.message && ch.session === current) timeline.changed(ch.message, ch.removed);
  if (event.type === 'session.updated' && ch.session === current) timeline.refresh();
  if (event.type === 'session.deleted' && ch.session === current) go(null);
  if (ch.status === current) timeline.changed(null, true);
  if (ch.error && ch.error === current && ch.detail && ch.detail.name !== 'MessageAbortedError') toast(errorText(ch.detail));
  if (event.type === 'session.idle') {
    if (!$('review').hidden) review.load();
    files.stale();
  }
  // Streamed parts redraw the header and bottom; the sidebar only when sessions or statuses change.
  if (ch.sessions || ch.status) drawAll();
  else if (ch.permissions || ch.todos || ch.message) drawAll(false);
}, (s) => {
  connected = s === 'live';
  $('conn').hidden = connected || !everConnected;
  document.body.classList.toggle('offline', !connected);
});

// ---- theme, review panel, shortcuts

function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  $('toggle-theme').title = `Theme: ${theme || 'system'} (Alt+T)`;
}
function cycleTheme() {
  const order = ['system', 'light', 'dark'];
  const next = order[(order.indexOf(localStorage.getItem('theme') || 'system') + 1) % 3];
  localStorage.setItem('theme', next);
  applyTheme(next);
}
applyTheme(localStorage.getItem('theme'));
$('toggle-theme').addEventListener('click', cycleTheme);

// One side panel at a time: Changes, Files or Terminal.
function togglePanel(id, on) {
  const panel = $(id);
  panel.hidden = on === undefined ? !panel.hidden : !on;
  for (const other of ['review', 'files', 'terminal']) {
    if (other !== id && !panel.hidden) $(other).hidden = true;
    $('toggle-' + other).classList.toggle('on', !$(other).hidden);
  }
}
function toggleReview(on) {
  togglePanel('review', on);
  review.load();
}
function toggleFiles(on) {
  togglePanel('files', on);
  files.load();
}
function toggleTerminal(on) {
  togglePanel('terminal', on);
  terminal.show();
}
$('toggle-review').addEventListener('click', () => toggleReview());
$('toggle-terminal').addEventListener('click', () => toggleTerminal());
$('toggle-files').addEventListener('click', () => toggleFiles());
const help = (on) => { $('help').hidden = !on; };
$('show-help').addEventListener('click', () => help(true));
$('close-help').addEventListener('click', () => help(false));

function step(by) {
  const ids = [...$('sessions').querySelectorAll('li.session')].map((li) => li.dataset.id);
  if (!ids.length) return;
  const at = ids.indexOf(state.current);
  go(ids[Math.max(0, Math.min(ids.length - 1, at < 0 ? 0 : at + by))]);
}

document.addEventListener('keydown', (e) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
  if (e.altKey && !e.ctrlKey && !e.metaKey) {
    const k = e.key.toLowerCase();
    if (k === 'n' || e.code === 'KeyN') { e.preventDefault(); newSession(); return; }
    if (k === 'd' || e.code === 'KeyD') { e.preventDefault(); toggleReview(); return; }
    if (k === 'e' || e.code === 'KeyE') { e.preventDefault(); toggleFiles(); return; }
    if (k === 'j' || e.code === 'KeyJ') { e.preventDefault(); toggleTerminal(); return; }
    if (k === 't' || e.code === 'KeyT') { e.preventDefault(); cycleTheme(); return; }
    if (e.key === 'ArrowUp') { e.preventDefault(); step(-1); return; }
    if (e.key === 'ArrowDown') { e.preventDefault(); step(1); return; }
  }
  if (e.key === 'Escape') {
    if (!$('help').hidden) help(false);
    else if (!typing) interrupt();
    return;
  }
  if (typing) return;
  if (e.key === '/') { e.preventDefault(); composer.focus(); }
  if (e.key === '?') { e.preventDefault(); help(true); }
});

window.addEventListener('hashchange', route);
sync().then(route);
