// A small Markdown renderer that builds DOM nodes (never HTML strings): fenced code with light
// highlighting, headings, lists, quotes, tables-as-text, paragraphs, inline code, bold, italics and
// http(s) links. Raw HTML in the source stays text.

import { h } from './dom.js';

export function markdown(source) {
  const root = h('div.md');
  const lines = String(source || '').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) root.append(h('p', null, inline(para.join('\n'))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      root.append(codeBlock(body.join('\n'), fence[2]));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flush();
      root.append(h('h' + Math.min(heading[1].length + 2, 6), null, inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      flush();
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        const item = lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, '');
        const task = item.match(/^\[([ xX])\]\s+(.*)$/);
        list.append(task
          ? h('li.task', null, h('input', { type: 'checkbox', disabled: true, checked: task[1] !== ' ' }), inline(task[2]))
          : h('li', null, inline(item)));
        i++;
      }
      root.append(list);
      continue;
    }
    if (/^>\s?/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ''));
      root.append(h('blockquote', null, markdown(quoted.join('\n'))));
      continue;
    }
    if (/^\s*(---+|\*\*\*+)\s*$/.test(line)) {
      flush();
      root.append(h('hr'));
      i++;
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line)) {
      flush();
      const rows = [];
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(lines[i++]);
      root.append(table(rows));
      continue;
    }
    if (!line.trim()) flush();
    else para.push(line);
    i++;
  }
  flush();
  return root;
}

function table(rows) {
  const cells = (row) => row.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
  const body = rows.filter((r) => !/^\s*\|[\s:|-]+\|\s*$/.test(r));
  const [head, ...rest] = body;
  return h('table', null,
    head ? h('thead', null, h('tr', null, cells(head).map((c) => h('th', null, inline(c))))) : null,
    h('tbody', null, rest.map((r) => h('tr', null, cells(r).map((c) => h('td', null, inline(c)))))));
}

/** Inline spans: `code`, **bold**, *italic*, [text](http...), bare URLs. */
export function inline(text) {
  const out = [];
  const pattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+)/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(h('code', null, m[2]));
    else if (m[3] || m[4]) out.push(h('strong', null, inline(m[3] || m[4])));
    else if (m[5]) out.push(h('em', null, inline(m[5])));
    else if (m[6]) out.push(link(m[7], inline(m[6])));
    else if (m[8]) out.push(link(m[8], m[8]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function link(href, children) {
  if (!/^(https?:|mailto:)/i.test(href)) return h('span', null, children);
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, children);
}

export function codeBlock(code, lang) {
  const copy = h('button.copy', { title: 'Copy', type: 'button' }, 'copy');
  copy.addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText(code));
  return h('div.code', null,
    h('div.code-head', null, h('span', null, lang || 'text'), copy),
    h('pre', null, h('code', null, highlight(code, lang))));
}

const KEYWORDS = new Set(('as async await break case catch class const continue crate def default defer do ' +
  'elif else enum export extends false fn for from func function go if impl import in interface let loop ' +
  'match mod module mut new nil None null package pass pub raise return self Self static struct super switch ' +
  'this throw trait true True False try type typeof use var void where while with yield').split(' '));

/** Comments, strings, numbers and keywords as spans; everything else plain text. */
export function highlight(code, lang) {
  if (code.length > 200000 || lang === 'text' || lang === 'diff') return [code];
  const hash = /^(py|python|sh|bash|shell|zsh|yaml|yml|toml|rb|ruby)$/.test(lang || '');
  const token = hash
    ? /(#[^\n]*)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|\b(\d[\w.]*)\b|\b([A-Za-z_]\w*)\b/g
    : /(\/\/[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|\b(\d[\w.]*)\b|\b([A-Za-z_]\w*)\b/g;
  const out = [];
  let last = 0;
  for (const m of code.matchAll(token)) {
    if (m[4] && !KEYWORDS.has(m[4])) continue;
    if (m.index > last) out.push(code.slice(last, m.index));
    const kind = m[1] ? 'c' : m[2] ? 's' : m[3] ? 'n' : 'k';
    out.push(h('span.t' + kind, null, m[0]));
    last = m.index + m[0].length;
  }
  if (last < code.length) out.push(code.slice(last));
  return out;
}

/** A unified diff, one line per row, additions and deletions coloured. */
export function diffView(patch) {
  const rows = String(patch || '').split('\n').filter((l) => !/^(diff --git|index |Index: |====)/.test(l));
  return h('pre.diff', null, rows.map((l) => {
    const kind = l.startsWith('+++') || l.startsWith('---') ? 'f'
      : l.startsWith('@@') ? 'h' : l.startsWith('+') ? 'a' : l.startsWith('-') ? 'd' : 'x';
    return h('div.dl.d' + kind, null, l || ' ');
  }));
}
