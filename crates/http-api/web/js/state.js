// What the UI knows, and the one reducer that folds /event events into it. Views read it; nothing
// else writes it.

export const state = {
  directory: '', // the instance directory (GET /path)
  serverDirectory: '', // the server's own directory (GET /path without ?directory=)
  projects: [], // GET /project
  sessions: new Map(), // id -> session info
  current: null, // the open session's id
  threads: new Map(), // sessionID -> Thread
  status: new Map(), // sessionID -> {type: 'idle'|'busy'|'retry', ...}
  permissions: new Map(), // requestID -> permission request
  questions: new Map(), // requestID -> question request
  commands: [], // {name, description, ...} from GET /command
  todos: new Map(), // sessionID -> todo items
  queued: new Map(), // sessionID -> prompts sent while a turn ran, not yet in the timeline
  agents: [],
  models: [], // {providerID, modelID, name, variants: [names]}
  defaultModel: null,
};

/** The messages of one session: ordered ids and each message's info and parts. */
export class Thread {
  constructor() {
    this.order = [];
    this.byId = new Map();
  }

  message(id) {
    let m = this.byId.get(id);
    if (!m) {
      m = { info: { id }, parts: new Map() };
      this.byId.set(id, m);
      const last = this.order[this.order.length - 1];
      this.order.push(id);
      if (last && last > id) this.order.sort();
    }
    return m;
  }

  remove(id) {
    if (this.byId.delete(id)) this.order = this.order.filter((x) => x !== id);
  }

  /** The messages shown: those before a staged revert's message. */
  visible(session) {
    const cut = session && session.revert && session.revert.messageID;
    return cut ? this.order.filter((id) => id < cut) : this.order;
  }
}

export function thread(sessionID) {
  let t = state.threads.get(sessionID);
  if (!t) {
    t = new Thread();
    state.threads.set(sessionID, t);
  }
  return t;
}

export function load(sessionID, messages) {
  const t = new Thread();
  for (const { info, parts } of messages) {
    const m = t.message(info.id);
    m.info = info;
    for (const p of parts) m.parts.set(p.id, p);
  }
  state.threads.set(sessionID, t);
  return t;
}

export const isBusy = (id) => {
  const s = state.status.get(id);
  return !!s && s.type !== 'idle';
};

/**
 * Applies one event. Returns what changed: {sessions?, session?, message?, permissions?, todos?,
 * status?} so the app redraws only that.
 */
export function reduce(event) {
  const p = event.properties || {};
  switch (event.type) {
    case 'session.created':
    case 'session.updated':
      if (p.info) state.sessions.set(p.info.id, p.info);
      return { sessions: true, session: p.info && p.info.id };
    case 'session.deleted':
      if (p.info) {
        state.sessions.delete(p.info.id);
        state.threads.delete(p.info.id);
      }
      return { sessions: true, session: p.info && p.info.id };
    case 'session.status':
      state.status.set(p.sessionID, p.status || { type: 'idle' });
      return { status: p.sessionID, sessions: true };
    case 'session.idle':
      state.status.set(p.sessionID, { type: 'idle' });
      return { status: p.sessionID, sessions: true };
    case 'session.error':
      return { error: p.sessionID, detail: p.error };
    case 'message.updated': {
      if (!p.info || !state.threads.has(p.info.sessionID)) return {};
      const m = thread(p.info.sessionID).message(p.info.id);
      m.info = p.info;
      return { message: p.info.id, session: p.info.sessionID };
    }
    case 'message.removed':
      if (state.threads.has(p.sessionID)) thread(p.sessionID).remove(p.messageID);
      return { message: p.messageID, session: p.sessionID, removed: true };
    case 'message.part.updated': {
      const part = p.part;
      if (!part || !state.threads.has(part.sessionID)) return {};
      const m = thread(part.sessionID).message(part.messageID);
      m.parts.set(part.id, part);
      // A queued prompt reaches the timeline as a user message with its text (after an interrupt
      // it waits for the next prompt, and is taken with it).
      const queued = state.queued.get(part.sessionID);
      if (queued && m.info.role === 'user' && part.type === 'text') {
        const at = queued.indexOf((part.text || '').trim());
        if (at >= 0) queued.splice(at, 1);
      }
      return { message: part.messageID, session: part.sessionID };
    }
    case 'message.part.delta': {
      if (!state.threads.has(p.sessionID)) return {};
      const m = thread(p.sessionID).message(p.messageID);
      const part = m.parts.get(p.partID);
      if (!part) return {};
      const field = p.field || 'text';
      part[field] = (part[field] || '') + (p.delta || '');
      return { message: p.messageID, session: p.sessionID };
    }
    case 'message.part.removed': {
      if (!state.threads.has(p.sessionID)) return {};
      thread(p.sessionID).message(p.messageID).parts.delete(p.partID);
      return { message: p.messageID, session: p.sessionID };
    }
    case 'permission.asked':
      state.permissions.set(p.id, p);
      return { permissions: true };
    case 'permission.replied':
      state.permissions.delete(p.requestID || p.permissionID || p.id);
      return { permissions: true };
    case 'question.asked':
      state.questions.set(p.id, p);
      return { permissions: true };
    case 'question.replied':
    case 'question.rejected':
      state.questions.delete(p.requestID || p.id);
      return { permissions: true };
    case 'todo.updated':
      state.todos.set(p.sessionID, p.todos || []);
      return { todos: p.sessionID };
    default:
      return {};
  }
}

/** Tokens and cost of a session's assistant messages. */
export function totals(sessionID) {
  const t = state.threads.get(sessionID);
  const sum = { input: 0, output: 0, reasoning: 0, cache: 0, cost: 0, context: 0 };
  if (!t) return sum;
  for (const id of t.order) {
    const info = t.byId.get(id).info;
    if (info.role !== 'assistant' || !info.tokens) continue;
    const k = info.tokens;
    sum.input += k.input || 0;
    sum.output += k.output || 0;
    sum.reasoning += k.reasoning || 0;
    sum.cache += (k.cache && (k.cache.read || 0)) || 0;
    sum.cost += info.cost || 0;
    const context = (k.input || 0) + (k.cache ? (k.cache.read || 0) + (k.cache.write || 0) : 0);
    if (context) sum.context = context;
  }
  return sum;
}
