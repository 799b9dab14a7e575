// The session timeline, windowed: at most WINDOW messages are in the DOM at once. Scrolling near
// the top or bottom slides the window by STEP messages and keeps what is on screen in place, so a
// session of thousands of messages costs what a few dozen do. Changes are redrawn once per frame.

import { h, replace } from './dom.js';
import { state, isBusy } from './state.js';
import { renderPart, usage, errorText } from './parts.js';

const WINDOW = 80;
const STEP = 40;
const EDGE = 300;

export function createTimeline(root, actions) {
  const list = h('div.messages');
  const earlier = h('div.earlier');
  const working = h('div.working', { hidden: true }, h('span.dot'), h('span.dot'), h('span.dot'));
  const empty = h('div.empty', null, h('h2', null, 'What shall we build?'),
    h('p', null, 'Type a prompt below. ', h('kbd', null, '@'), ' mentions a file, ', h('kbd', null, 'Enter'), ' sends, ',
      h('kbd', null, 'Shift+Enter'), ' adds a line, ', h('kbd', null, 'Esc'), ' interrupts.'));
  root.append(earlier, list, working);
  let sessionID = null;
  let start = 0;
  let end = 0;
  let stuck = true;
  const nodes = new Map(); // messageID -> element
  const dirty = new Set();
  let frame = 0;
  let sliding = false;
  let drawnTotal = 0; // how many messages there were at the last draw
  let autoTop = -1; // where the timeline scrolled itself to last (its own scroll events change nothing)

  const toEnd = () => {
    root.scrollTop = root.scrollHeight;
    autoTop = root.scrollTop;
  };

  const ids = () => {
    const t = state.threads.get(sessionID);
    return t ? t.visible(state.sessions.get(sessionID)) : [];
  };

  function node(id) {
    let el = nodes.get(id);
    if (!el || dirty.has(id)) {
      const fresh = messageEl(id);
      if (el && el.parentNode) el.replaceWith(fresh);
      el = fresh;
      nodes.set(id, el);
      dirty.delete(id);
    }
    return el;
  }

  function draw() {
    frame = 0;
    const all = ids();
    if (stuck) {
      end = all.length;
      start = Math.max(0, end - WINDOW);
    }
    end = Math.min(end, all.length);
    start = Math.max(0, Math.min(start, end - 1));
    drawnTotal = all.length;
    const shown = all.slice(start, end);
    const keep = new Set(shown);
    for (const id of dirty) if (keep.has(id)) node(id);
    dirty.clear();
    // Reconcile children in order without rebuilding the ones that stay.
    let cursor = list.firstChild;
    for (const id of shown) {
      const el = node(id);
      if (el === cursor) cursor = cursor.nextSibling;
      else list.insertBefore(el, cursor);
    }
    while (cursor) {
      const next = cursor.nextSibling;
      cursor.remove();
      cursor = next;
    }
    for (const id of nodes.keys()) if (!keep.has(id)) nodes.delete(id);
    earlier.textContent = start > 0 ? `${start} earlier messages · scroll up to see them` : '';
    earlier.hidden = start === 0;
    if (!all.length) {
      if (!empty.parentNode) root.append(empty);
    } else if (empty.parentNode) empty.remove();
    working.hidden = !isBusy(sessionID) || end < all.length;
    if (stuck) toEnd();
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function slide(toStart, toEnd, anchorFirst) {
    const anchor = anchorFirst ? list.firstElementChild : list.lastElementChild;
    const before = anchor ? anchor.getBoundingClientRect().top : 0;
    start = toStart;
    end = toEnd;
    sliding = true;
    draw();
    if (anchor && anchor.isConnected) root.scrollTop += anchor.getBoundingClientRect().top - before;
    sliding = false;
  }

  // A dock or panel that opens below shrinks the timeline: keep following the end.
  new ResizeObserver(() => { if (stuck) toEnd(); }).observe(root);

  root.addEventListener('scroll', () => {
    if (sliding || Math.abs(root.scrollTop - autoTop) < 2) return;
    const all = ids().length;
    const fromBottom = root.scrollHeight - root.scrollTop - root.clientHeight;
    if (root.scrollTop < EDGE && start > 0) {
      const s = Math.max(0, start - STEP);
      slide(s, Math.min(all, s + WINDOW), true);
    } else if (fromBottom < EDGE && end < all) {
      const e = Math.min(all, end + STEP);
      slide(Math.max(0, e - WINDOW), e, false);
    }
    // Following the end: at the bottom of a window that held every message when it was drawn
    // (messages that arrived since are drawn by the next frame).
    stuck = end >= drawnTotal && root.scrollHeight - root.scrollTop - root.clientHeight < 40;
  }, { passive: true });

  function messageEl(id) {
    const m = state.threads.get(sessionID).byId.get(id);
    const info = m.info;
    const ctx = { directory: (state.sessions.get(sessionID) || {}).directory || state.directory };
    const parts = [...m.parts.values()].map((p) => renderPart(p, ctx)).filter(Boolean);
    if (info.role === 'user') {
      const revert = h('button.ghost.revert', { title: 'Revert to before this message', type: 'button' }, '↺ revert');
      revert.addEventListener('click', () => actions.revert(id));
      return h('div.msg.user', { dataset: { id } }, h('div.bubble', null, parts.length ? parts : '(empty)'),
        h('div.msg-actions', null, revert));
    }
    const foot = [];
    if (info.modelID) foot.push(h('span', null, `${info.providerID ? info.providerID + '/' : ''}${info.modelID}`));
    const u = info.time && info.time.completed ? usage(info) : null;
    if (u) foot.push(h('span', null, u));
    if (info.time && info.time.completed && info.time.created) {
      foot.push(h('span', null, ((info.time.completed - info.time.created) / 1000).toFixed(1) + 's'));
    }
    const error = info.error && info.error.name !== 'MessageAbortedError'
      ? h('div.part.error', null, errorText(info.error))
      : info.error ? h('div.part.meta', null, 'Interrupted') : null;
    return h('div.msg.assistant', { dataset: { id, done: !!(info.time && info.time.completed) } },
      parts, error, foot.length ? h('div.msg-foot', null, foot) : null);
  }

  return {
    show(id) {
      sessionID = id;
      nodes.clear();
      dirty.clear();
      replace(list);
      stuck = true;
      draw();
    },
    changed(messageID, removed) {
      if (removed) nodes.delete(messageID);
      else dirty.add(messageID);
      schedule();
    },
    /** Every message redrawn (e.g. a revert changed what is visible). */
    refresh() {
      for (const id of nodes.keys()) dirty.add(id);
      schedule();
    },
    scrollToEnd() {
      stuck = true;
      schedule();
    },
  };
}
