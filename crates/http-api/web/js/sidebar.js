// The project (a picker when the server knows several) and its sessions: search, new, rename
// (inline), fork, delete (asks once more), and child sessions under their parent.

import { h, replace, fmtTime } from './dom.js';
import { state, isBusy } from './state.js';

export function createSidebar(root, actions) {
  const search = h('input#search', { type: 'search', placeholder: 'Search sessions', 'aria-label': 'Search sessions' });
  const create = h('button#new-session.primary', { type: 'button', title: 'New session (Alt+N)' }, '+ New session');
  const list = h('ul#sessions');
  const project = h('div.project', null);
  root.append(h('div.side-head', null, project, create, search), list);
  create.addEventListener('click', () => actions.create());
  search.addEventListener('input', () => draw());
  let editing = null;
  let confirming = null;

  function item(s, depth) {
    const active = s.id === state.current;
    const title = s.title || 'New session';
    if (editing === s.id) {
      const field = h('input.rename', { value: title, 'aria-label': 'Session title' });
      let finished = false;
      const done = (save) => {
        if (finished) return;
        finished = true;
        editing = null;
        if (save && field.value.trim() && field.value.trim() !== title) actions.rename(s.id, field.value.trim());
        else draw();
      };
      field.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') done(true);
        if (e.key === 'Escape') done(false);
      });
      field.addEventListener('blur', () => done(true));
      queueMicrotask(() => { field.focus(); field.select(); });
      return h('li.session.editing', { dataset: { id: s.id } }, field);
    }
    const rename = h('button.icon', { type: 'button', title: 'Rename', 'aria-label': 'Rename' }, 'rename');
    const fork = h('button.icon', { type: 'button', title: 'Fork: a copy of this session', 'aria-label': 'Fork' }, 'fork');
    fork.addEventListener('click', (e) => {
      e.stopPropagation();
      actions.fork(s.id);
    });
    const remove = confirming === s.id
      ? h('button.icon.confirm', { type: 'button', title: 'Click again to delete' }, 'delete?')
      : h('button.icon', { type: 'button', title: 'Delete', 'aria-label': 'Delete' }, 'delete');
    rename.addEventListener('click', (e) => {
      e.stopPropagation();
      editing = s.id;
      draw();
    });
    remove.addEventListener('click', (e) => {
      e.stopPropagation();
      if (confirming === s.id) {
        confirming = null;
        actions.remove(s.id);
      } else {
        confirming = s.id;
        draw();
        setTimeout(() => { if (confirming === s.id) { confirming = null; draw(); } }, 3000);
      }
    });
    const li = h('li.session', { class: active ? 'active' : '', dataset: { id: s.id }, style: `--depth:${depth}` },
      h('span.busy', { hidden: !isBusy(s.id), title: 'working' }),
      h('span.title', { title }, title),
      h('span.when', null, fmtTime(s.time && (s.time.updated || s.time.created))),
      h('span.tools', null, rename, fork, remove));
    li.addEventListener('click', () => actions.open(s.id));
    return li;
  }

  function draw() {
    // A title being edited is not thrown away by a redraw (events keep coming while one types).
    if (editing && list.querySelector('input.rename')) return;
    const q = search.value.trim().toLowerCase();
    const all = [...state.sessions.values()].sort((a, b) => ((b.time || {}).updated || 0) - ((a.time || {}).updated || 0));
    const children = new Map();
    for (const s of all) {
      if (s.parentID) {
        if (!children.has(s.parentID)) children.set(s.parentID, []);
        children.get(s.parentID).push(s);
      }
    }
    const rows = [];
    const walk = (s, depth) => {
      rows.push(item(s, depth));
      for (const c of children.get(s.id) || []) walk(c, depth + 1);
    };
    if (q) all.filter((s) => (s.title || '').toLowerCase().includes(q)).forEach((s) => rows.push(item(s, 0)));
    else all.filter((s) => !s.parentID || !state.sessions.has(s.parentID)).forEach((s) => walk(s, 0));
    replace(list, rows.length ? rows : h('li.none', null, q ? 'No session matches.' : 'No sessions yet.'));
    const name = (dir) => dir.split('/').filter(Boolean).pop() || dir;
    const dirs = state.projects.map((p) => p.worktree).filter((w) => w && w !== '/');
    for (const d of [state.serverDirectory, state.directory]) if (d && !dirs.includes(d)) dirs.unshift(d);
    if (dirs.length < 2) {
      replace(project, h('span', { title: state.directory }, name(state.directory)));
      return;
    }
    const picker = h('select#project', { title: state.directory, 'aria-label': 'Project' },
      dirs.map((d) => h('option', { value: d, selected: d === state.directory, title: d }, name(d))));
    picker.addEventListener('change', () => actions.project(picker.value));
    replace(project, picker);
  }

  return { draw, search };
}
