// The review panel: the working tree's changes (GET /vcs/diff), one file per section.

import { h, replace } from './dom.js';
import { get } from './api.js';
import { diffView } from './markdown.js';

export function createReview(root, actions) {
  const body = h('div.review-body');
  const refresh = h('button.ghost', { type: 'button', title: 'Refresh' }, '↻');
  const close = h('button.ghost', { type: 'button', title: 'Close (Alt+D)' }, '✕');
  root.append(h('div.review-head', null, h('strong', null, 'Changes'), h('span.grow'), refresh, close), body);
  refresh.addEventListener('click', () => load());
  close.addEventListener('click', () => actions.toggle(false));

  async function load() {
    if (root.hidden) return;
    let files;
    try {
      files = await get('/vcs/diff?mode=git');
    } catch (err) {
      replace(body, h('div.none', null, err.message));
      return;
    }
    if (!files || !files.length) {
      replace(body, h('div.none', null, 'No changes in the working tree.'));
      return;
    }
    replace(body, files.map((f) => h('details.file-diff', { open: files.length <= 8 },
      h('summary', null, h('span.path', null, f.file), h('span.add', null, `+${f.additions}`), h('span.del', null, `−${f.deletions}`)),
      diffView(f.patch))));
  }
  return { load };
}
