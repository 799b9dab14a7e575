// The prompt box: Enter sends, Shift+Enter adds a line, Esc interrupts, `@` completes file paths
// (GET /find/file), `/` lists commands, images attach (paste, drop, or the button; sent as file
// parts with data: URLs), and the agent, model and variant pickers (variants: the chosen model's, e.g.
// reasoning effort; shown only when it has some). The draft is kept per session in sessionStorage,
// so a reload or a server restart never loses it.

import { h, replace } from './dom.js';
import { get } from './api.js';
import { state } from './state.js';

export function createComposer(root, actions) {
  const input = h('textarea#prompt', { rows: 1, placeholder: 'Ask anything… (@ for files, / for commands)', spellcheck: 'false', 'aria-label': 'Prompt' });
  const popover = h('ul.popover', { hidden: true, role: 'listbox' });
  const agent = h('select#agent', { title: 'Agent', 'aria-label': 'Agent' });
  const model = h('select#model', { title: 'Model', 'aria-label': 'Model' });
  const variant = h('select#variant', { title: 'Variant', 'aria-label': 'Variant', hidden: true });
  const send = h('button#send.primary', { type: 'button', title: 'Send (Enter)' }, 'Send');
  const picker = h('input#attach-input', { type: 'file', accept: 'image/*', multiple: true, hidden: true });
  const attach = h('button#attach.ghost', { type: 'button', title: 'Attach images (or paste, or drop them here)' }, '+ Image');
  const chips = h('div.attachments', { hidden: true });
  let attachments = []; // {mime, filename, url}
  const stop = h('button#stop.danger', { type: 'button', title: 'Interrupt (Esc)', hidden: true }, 'Stop');
  root.append(popover, h('div.composer-box', null, chips, input,
    h('div.composer-bar', null, attach, picker, agent, model, variant, h('span.grow'), stop, send)));

  const MAX_IMAGE = 5 * 1024 * 1024;
  function addFiles(files) {
    for (const file of files) {
      if (!file.type.startsWith('image/')) continue;
      if (file.size > MAX_IMAGE) {
        actions.error(new Error(`${file.name} is larger than 5 MB`));
        continue;
      }
      const reader = new FileReader();
      reader.onload = () => {
        attachments.push({ mime: file.type, filename: file.name || 'image', url: reader.result });
        drawChips();
      };
      reader.readAsDataURL(file);
    }
  }
  function drawChips() {
    chips.hidden = !attachments.length;
    replace(chips, attachments.map((a, i) => {
      const remove = h('button.icon', { type: 'button', title: 'Remove' }, '✕');
      remove.addEventListener('click', () => {
        attachments.splice(i, 1);
        drawChips();
      });
      return h('span.chip', null, h('img', { src: a.url, alt: '' }), h('span', null, a.filename), remove);
    }));
  }
  attach.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    addFiles(picker.files);
    picker.value = '';
  });
  input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])];
    if (files.length) {
      e.preventDefault();
      addFiles(files);
    }
  });
  root.addEventListener('dragover', (e) => e.preventDefault());
  root.addEventListener('drop', (e) => {
    e.preventDefault();
    addFiles(e.dataTransfer ? e.dataTransfer.files : []);
  });

  let sessionID = null;
  let items = [];
  let selected = 0;
  let mention = null; // {start, query}
  let seq = 0;

  const key = () => 'draft:' + (sessionID || 'new');
  // Files chosen from the `@` list: sent as file parts (the server reads them for the model) while
  // their mention is still in the text.
  const mentioned = new Set();
  function mentionedFiles(text) {
    const dir = state.directory.replace(/\/$/, '');
    return [...mentioned]
      .filter((path) => new RegExp(`(^|\\s)@${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`).test(text))
      .map((path) => ({ mime: 'text/plain', filename: path, url: `file://${dir}/${path}` }));
  }
  const grow = () => {
    input.style.height = 'auto';
    input.style.height = Math.min(input.scrollHeight, 240) + 'px';
  };

  input.addEventListener('input', () => {
    sessionStorage.setItem(key(), input.value);
    grow();
    complete();
  });

  input.addEventListener('keydown', (e) => {
    if (!popover.hidden) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        selected = (selected + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
        paint();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        choose(items[selected]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        close();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      actions.interrupt();
    }
  });
  // A click anywhere else closes the list (the list's own items choose on mousedown).
  document.addEventListener('mousedown', (e) => {
    if (!popover.hidden && !popover.contains(e.target) && e.target !== input) close();
  });
  send.addEventListener('click', submit);
  stop.addEventListener('click', () => actions.interrupt());

  async function submit() {
    const text = input.value.trim();
    if (!text && !attachments.length) return;
    const command = text.match(/^\/(\S+)\s*([\s\S]*)$/);
    const known = command && state.commands.some((c) => c.name === command[1]);
    const ok = known
      ? await actions.command(command[1], command[2], pickedAgent(), pickedModel())
      : await actions.send(text, pickedAgent(), pickedModel(), [...attachments, ...mentionedFiles(text)], variant.value || undefined);
    if (ok) {
      mentioned.clear();
      attachments = [];
      drawChips();
      input.value = '';
      sessionStorage.removeItem(key());
      grow();
    }
  }

  async function complete() {
    const caret = input.selectionStart;
    const before = input.value.slice(0, caret);
    const slash = before.match(/^\/(\S*)$/);
    if (slash) {
      const q = slash[1].toLowerCase();
      mention = { start: 0, end: caret, slash: true };
      items = state.commands.filter((c) => c.name.toLowerCase().includes(q)).slice(0, 12)
        .map((c) => ({ value: c.name, label: '/' + c.name, note: c.description || '' }));
      selected = 0;
      if (!items.length) return close();
      popover.hidden = false;
      return paint();
    }
    const m = before.match(/(^|\s)@([^\s@]*)$/);
    if (!m) {
      seq++; // an answer to an earlier lookup is late now
      return close();
    }
    mention = { start: caret - m[2].length - 1, end: caret, query: m[2] };
    const mine = ++seq;
    let found;
    try {
      found = await get('/find/file?limit=10&query=' + encodeURIComponent(m[2]));
    } catch (err) {
      actions.error(err);
      return close();
    }
    if (mine !== seq) return;
    items = (found || []).slice(0, 10).map((path) => ({ value: path, label: path }));
    selected = 0;
    if (!items.length) return close();
    popover.hidden = false;
    paint();
  }

  function paint() {
    replace(popover, items.map((item, i) => {
      const li = h('li', { role: 'option', class: i === selected ? 'on' : '', 'aria-selected': i === selected },
        h('span', null, item.label), item.note ? h('span.note', null, item.note) : null);
      li.addEventListener('mousedown', (e) => {
        e.preventDefault();
        choose(item);
      });
      return li;
    }));
  }

  function choose(item) {
    seq++; // an answer to a lookup still on its way must not reopen the list
    if (!mention || !item) return close();
    const v = input.value;
    const inserted = (mention.slash ? '/' : '@') + item.value + ' ';
    if (!mention.slash) mentioned.add(item.value);
    input.value = v.slice(0, mention.start) + inserted + v.slice(mention.end);
    const at = mention.start + inserted.length;
    input.setSelectionRange(at, at);
    sessionStorage.setItem(key(), input.value);
    close();
    input.focus();
  }

  function close() {
    popover.hidden = true;
    mention = null;
    items = [];
  }

  const pickedAgent = () => agent.value || undefined;
  /** The variants of the chosen model (the default one when none is chosen). */
  function drawVariants() {
    const chosen = model.value || state.defaultModel || '';
    const found = state.models.find((m) => `${m.providerID}/${m.modelID}` === chosen);
    const names = found?.variants || [];
    const keep = variant.value;
    replace(variant, h('option', { value: '' }, 'default'), names.map((name) => h('option', { value: name }, name)));
    variant.value = names.includes(keep) ? keep : '';
    variant.hidden = names.length === 0;
  }
  model.addEventListener('change', drawVariants);
  const pickedModel = () => {
    if (!model.value) return undefined;
    const [providerID, ...rest] = model.value.split('/');
    return { providerID, modelID: rest.join('/') };
  };

  return {
    input,
    /** Switches to another session's draft. */
    open(id) {
      sessionID = id;
      mentioned.clear();
      input.value = sessionStorage.getItem(key()) || '';
      grow();
      close();
    },
    busy(on) {
      stop.hidden = !on;
    },
    pickers() {
      const keepAgent = agent.value || localStorage.getItem('agent') || '';
      const keepModel = model.value || localStorage.getItem('model') || '';
      const primary = state.agents.filter((a) => a.mode !== 'subagent' && !a.hidden);
      replace(agent, primary.map((a) => h('option', { value: a.name, title: a.description || '' }, a.name)));
      if (primary.some((a) => a.name === keepAgent)) agent.value = keepAgent;
      const def = state.defaultModel || '';
      replace(model, h('option', { value: '' }, def ? `default (${def})` : 'default model'),
        state.models.map((m) => h('option', { value: `${m.providerID}/${m.modelID}` }, `${m.providerID}/${m.name || m.modelID}`)));
      if (state.models.some((m) => `${m.providerID}/${m.modelID}` === keepModel)) model.value = keepModel;
      drawVariants();
    },
    focus() {
      input.focus();
    },
    remember() {
      localStorage.setItem('agent', agent.value);
      localStorage.setItem('model', model.value);
    },
    agentSelect: agent,
    modelSelect: model,
  };
}
