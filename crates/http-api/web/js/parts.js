// One renderer per part type, and per tool for tool parts. Each returns DOM built with h().

import { h, fmtNumber, fmtCost } from './dom.js';
import { markdown, codeBlock, diffView } from './markdown.js';

export function renderPart(part, ctx) {
  switch (part.type) {
    case 'text':
      if (part.synthetic || part.ignored) return null;
      return h('div.part.text', null, markdown(part.text));
    case 'reasoning':
      if (!part.text || !part.text.trim()) return null;
      return h('details.part.reasoning', null, h('summary', null, 'Thinking'), markdown(part.text));
    case 'tool':
      return renderTool(part, ctx);
    case 'file':
      if ((part.mime || '').startsWith('image/') && /^data:image\//.test(part.url || '')) {
        return h('div.part.file', null, h('img.attached', { src: part.url, alt: part.filename || 'image' }));
      }
      return h('div.part.file', null, 'file: ', part.filename || part.url);
    case 'step-finish':
    case 'step-start':
    case 'snapshot':
      return null;
    case 'patch':
      return h('div.part.patch', null, `${(part.files || []).length} file(s) changed`);
    case 'agent':
      return h('div.part.meta', null, `@${part.name}`);
    case 'subtask':
      return h('div.part.meta', null, `subtask (${part.agent}): ${part.description || ''}`);
    case 'compaction':
      return h('div.part.meta', null, 'Conversation compacted');
    case 'retry':
      return h('div.part.error', null, `Retrying (attempt ${part.attempt}): ${errorText(part.error)}`);
    default:
      return null;
  }
}

export function errorText(error) {
  if (!error) return '';
  if (typeof error === 'string') return error;
  return (error.data && error.data.message) || error.message || error.name || JSON.stringify(error);
}

const rel = (path, ctx) => {
  const dir = ctx && ctx.directory;
  return dir && path && path.startsWith(dir + '/') ? path.slice(dir.length + 1) : path || '';
};

const lang = (path) => ((path || '').match(/\.([A-Za-z0-9]+)$/) || [])[1] || 'text';

function renderTool(part, ctx) {
  const st = part.state || {};
  const input = st.input || {};
  const meta = st.metadata || {};
  const status = st.status || 'pending';
  const body = [];
  let title = part.tool;
  let summary = st.title || '';
  const output = typeof st.output === 'string' ? st.output : '';
  switch (part.tool) {
    case 'bash': {
      title = 'Shell';
      summary = input.description || '';
      const out = output || meta.output || '';
      body.push(h('pre.term', null, h('span.prompt', null, '$ '), input.command || '', out ? '\n' + out.replace(/\n$/, '') : ''));
      if (meta.exit !== undefined && meta.exit !== null && meta.exit !== 0) body.push(h('div.exit', null, `exit ${meta.exit}`));
      break;
    }
    case 'edit':
    case 'multiedit':
      title = 'Edit';
      summary = rel(input.filePath, ctx);
      if (meta.diff) body.push(diffView(meta.diff));
      else if (input.oldString !== undefined) body.push(diffView(
        input.oldString.split('\n').map((l) => '-' + l).concat(String(input.newString || '').split('\n').map((l) => '+' + l)).join('\n')));
      break;
    case 'write':
      title = 'Write';
      summary = rel(input.filePath, ctx);
      if (meta.diff) body.push(diffView(meta.diff));
      else if (input.content !== undefined) body.push(codeBlock(input.content, lang(input.filePath)));
      break;
    case 'apply_patch':
    case 'patch':
      title = 'Patch';
      summary = (meta.files || []).map((f) => rel(f.filePath || f.file || f, ctx)).join(', ') || st.title || '';
      if (meta.diff || input.patchText) body.push(diffView(meta.diff || input.patchText));
      break;
    case 'read':
      title = 'Read';
      summary = rel(input.filePath, ctx) + (input.offset ? ` from line ${input.offset}` : '') + (input.limit ? ` (${input.limit} lines)` : '');
      break;
    case 'grep':
      title = 'Grep';
      summary = `${input.pattern || ''}${input.path ? ' in ' + rel(input.path, ctx) : ''}${input.include ? ' (' + input.include + ')' : ''}`;
      if (meta.matches !== undefined) summary += ` · ${meta.matches} matches`;
      break;
    case 'glob':
      title = 'Glob';
      summary = `${input.pattern || ''}${input.path ? ' in ' + rel(input.path, ctx) : ''}`;
      if (meta.count !== undefined) summary += ` · ${meta.count} files`;
      break;
    case 'list':
      title = 'List';
      summary = rel(input.path, ctx) || '.';
      break;
    case 'webfetch':
      title = 'Fetch';
      summary = input.url || '';
      break;
    case 'todowrite':
    case 'todoread':
      title = 'Todos';
      summary = '';
      body.push(todoList(input.todos || meta.todos || []));
      break;
    case 'task':
      title = 'Task';
      summary = `${input.subagent_type || 'agent'}: ${input.description || ''}`;
      if (meta.sessionId || meta.sessionID) {
        const id = meta.sessionId || meta.sessionID;
        body.push(h('a.child', { href: '#/session/' + id }, 'Open subagent session →'));
      }
      break;
    case 'question':
      title = 'Question';
      break;
    default:
      if (Object.keys(input).length) body.push(h('pre.json', null, JSON.stringify(input, null, 2)));
  }
  const folded = ['read', 'grep', 'glob', 'list', 'webfetch', 'task'].includes(part.tool) ||
    !['bash', 'edit', 'multiedit', 'write', 'apply_patch', 'patch', 'todowrite', 'todoread'].includes(part.tool);
  if (status === 'error') body.push(h('div.tool-error', null, errorText(st.error)));
  else if (folded && output) body.push(h('details.output', null, h('summary', null, 'Output'), h('pre', null, clip(output))));
  return h('div.part.tool', { dataset: { tool: part.tool, status } },
    h('div.tool-head', null,
      h('span.tool-status', { title: status }),
      h('span.tool-name', null, title),
      h('span.tool-summary', null, summary)),
    body.length ? h('div.tool-body', null, body) : null);
}

const clip = (text) => (text.length > 20000 ? text.slice(0, 20000) + '\n… (truncated)' : text);

export function todoList(todos) {
  return h('ul.todos', null, todos.map((t) => h('li', { dataset: { status: t.status } },
    h('span.box', null, t.status === 'completed' ? '✓' : t.status === 'in_progress' ? '•' : t.status === 'cancelled' ? '✕' : ''),
    h('span', null, t.content))));
}

export function usage(info) {
  if (!info.tokens) return null;
  const k = info.tokens;
  if (!k.input && !k.output && !info.cost) return null;
  const bits = [`${fmtNumber(k.input)} in`, `${fmtNumber(k.output)} out`];
  if (k.reasoning) bits.push(`${fmtNumber(k.reasoning)} reasoning`);
  if (k.cache && k.cache.read) bits.push(`${fmtNumber(k.cache.read)} cached`);
  bits.push(fmtCost(info.cost));
  return bits.join(' · ');
}
