// The Files panel: the project's tree (GET /file, one directory at a time, loaded when opened) and a
// viewer for one file (GET /file/content): text highlighted, images shown, other binaries named.

import { h, replace } from './dom.js';
import { get } from './api.js';
import { codeBlock } from './markdown.js';

export function createFiles(root, actions) {
  const body = h('div.files-body');
  const title = h('strong', null, 'Files');
  const back = h('button.ghost', { type: 'button', title: 'Back to the tree', hidden: true }, '←');
  const close = h('button.ghost', { type: 'button', title: 'Close (Alt+E)' }, '✕');
  const tree = h('ul.tree');
  const viewer = h('div.viewer', { hidden: true });
  root.append(h('div.review-head', null, back, title, h('span.grow'), close), body);
  body.append(tree, viewer);
  close.addEventListener('click', () => actions.toggle(false));
  back.addEventListener('click', () => show(null));
  let loaded = false;

  async function list(path) {
    const q = path ? '?path=' + encodeURIComponent(path) : '';
    const entries = await get('/file' + q);
    return (entries || []).sort((a, b) => (a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'directory' ? -1 : 1));
  }

  function branch(entries) {
    return entries.map((e) => {
      const row = h('div.tree-row', { class: e.ignored ? 'ignored' : '', title: e.path },
        h('span.twisty', null, e.type === 'directory' ? '▸' : ''), h('span', null, e.name));
      const li = h('li', { dataset: { path: e.path, type: e.type } }, row);
      let children = null;
      row.addEventListener('click', async () => {
        if (e.type !== 'directory') return show(e.path);
        if (children) {
          children.hidden = !children.hidden;
          row.firstChild.textContent = children.hidden ? '▸' : '▾';
          return;
        }
        try {
          children = h('ul.tree', null, branch(await list(e.path)));
        } catch (err) {
          return actions.error(err);
        }
        li.append(children);
        row.firstChild.textContent = '▾';
      });
      return li;
    });
  }

  async function show(path) {
    back.hidden = !path;
    tree.hidden = !!path;
    viewer.hidden = !path;
    title.textContent = path || 'Files';
    if (!path) return;
    replace(viewer, h('div.none', null, 'Loading…'));
    try {
      const file = await get('/file/content?path=' + encodeURIComponent(path));
      const ext = (path.match(/\.([A-Za-z0-9]+)$/) || [])[1] || 'text';
      if (file.type === 'text') replace(viewer, codeBlock(file.content, ext));
      else if ((file.mimeType || '').startsWith('image/') && file.encoding === 'base64') {
        replace(viewer, h('img.attached', { src: `data:${file.mimeType};base64,${file.content}`, alt: path }));
      } else replace(viewer, h('div.none', null, `A binary file (${file.mimeType || 'unknown type'}).`));
    } catch (err) {
      replace(viewer, h('div.none', null, err.message));
    }
  }

  return {
    async load() {
      if (root.hidden || loaded) return;
      try {
        replace(tree, branch(await list('')));
        loaded = true;
      } catch (err) {
        replace(tree, h('li.none', null, err.message));
      }
    },
    /** Forgets the tree (files changed); reloaded when next shown. */
    stale() {
      loaded = false;
      if (!root.hidden && tree.hidden === false) this.load();
    },
  };
}
