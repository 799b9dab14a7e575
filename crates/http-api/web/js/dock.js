// The permission dock: the open session's pending permission requests, one at a time, answered
// allow once / always / reject (with an optional message).

import { h, replace } from './dom.js';
import { state } from './state.js';

export function createDock(root, actions) {
  function draw() {
    const pending = [...state.permissions.values()].filter((p) => p.sessionID === state.current);
    const elsewhere = state.permissions.size - pending.length;
    root.hidden = !pending.length && !elsewhere;
    if (!pending.length) {
      replace(root, elsewhere ? h('div.dock-note', null, `${elsewhere} permission request(s) wait in other sessions`) : null);
      return;
    }
    const p = pending[0];
    const meta = p.metadata || {};
    const detail = meta.command || meta.filepath || meta.filePath || meta.url || (p.patterns || []).join(', ');
    const message = h('input.reject-message', { placeholder: 'Tell the agent why (optional, with Reject)', 'aria-label': 'Reason' });
    const button = (label, reply, cls) => {
      const b = h('button' + cls, { type: 'button', dataset: { reply } }, label);
      b.addEventListener('click', () => actions.reply(p.id, reply, message.value.trim()));
      return b;
    };
    replace(root,
      h('div.dock-title', null, h('strong', null, `Permission: ${p.permission}`),
        pending.length > 1 ? h('span.count', null, ` (+${pending.length - 1} more)`) : null),
      detail ? h('pre.dock-detail', null, detail) : null,
      meta.diff ? h('div.dock-diff', null, actions.diff(meta.diff)) : null,
      (p.always || []).length ? h('div.dock-always', null, 'Always allows: ', p.always.join(', ')) : null,
      h('div.dock-actions', null,
        button('Allow once', 'once', '.primary'),
        button('Always allow', 'always', ''),
        message,
        button('Reject', 'reject', '.danger')));
  }
  return { draw };
}
