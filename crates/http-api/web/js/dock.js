// The dock above the composer: the open session's pending permission requests, one at a time,
// answered allow once / always / reject (with an optional message); then its questions (the
// question tool), answered by choosing options or dismissed.

import { h, replace } from './dom.js';
import { state } from './state.js';

export function createDock(root, actions) {
  function draw() {
    const pending = [...state.permissions.values()].filter((p) => p.sessionID === state.current);
    const asked = [...state.questions.values()].filter((q) => q.sessionID === state.current);
    const elsewhere = state.permissions.size + state.questions.size - pending.length - asked.length;
    root.hidden = !pending.length && !asked.length && !elsewhere;
    if (!pending.length && asked.length) {
      question(asked[0]);
      return;
    }
    if (!pending.length) {
      replace(root, elsewhere ? h('div.dock-note', null, `${elsewhere} request(s) wait for you in other sessions`) : null);
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
  function question(q) {
    const chosen = q.questions.map(() => new Set());
    const blocks = q.questions.map((item, i) => h('div.question', null,
      h('div.q-text', null, h('strong', null, item.header ? item.header + ': ' : ''), item.question),
      h('div.q-options', null, item.options.map((o) => {
        const b = h('button.option', { type: 'button', title: o.description || '', dataset: { label: o.label } }, o.label);
        b.addEventListener('click', () => {
          if (!item.multiple) {
            chosen[i].clear();
            b.parentNode.querySelectorAll('.option').forEach((x) => x.classList.remove('on'));
          }
          if (chosen[i].has(o.label)) chosen[i].delete(o.label);
          else chosen[i].add(o.label);
          b.classList.toggle('on', chosen[i].has(o.label));
        });
        return b;
      }))));
    const submit = h('button.primary', { type: 'button', dataset: { reply: 'answer' } }, 'Answer');
    const dismiss = h('button', { type: 'button', dataset: { reply: 'dismiss' } }, 'Dismiss');
    submit.addEventListener('click', () => actions.answer(q.id, chosen.map((set) => [...set])));
    dismiss.addEventListener('click', () => actions.dismiss(q.id));
    replace(root, h('div.dock-title', null, h('strong', null, 'The agent asks')), blocks,
      h('div.dock-actions', null, submit, dismiss));
  }

  return { draw };
}
