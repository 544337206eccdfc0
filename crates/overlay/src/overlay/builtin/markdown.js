// builtin:markdown: a text as Markdown, safely: every character is text (the
// DOM is built node by node, never from HTML), and only http(s) links are links.
function kitRender(text, K, root) {
  'use strict';
  if (typeof text !== 'string') text = text == null ? '' : JSON.stringify(text, null, 2);
  // Inline constructs in one pass, left to right: at each position the first
  // that matches (code, strong, emphasis, link, bare URL) wins, as in
  // /(`+)([^`]+?)\1|\*\*(.+?)\*\*|__(.+?)__|\*(.+?)\*|_(.+?)_|\[([^\]]+)\]\(([^)\s]+)\)|https?:\/\/[^\s<>()]+/
  // but without its backtracking: each closing delimiter is found by `next`,
  // whose search only moves forward, so a text full of unclosed `[`, `*` or
  // backquotes renders in linear time.
  var NEEDLES = { ws: /\s/g, url: /[\s<>()]/g };
  function inline(s, into) {
    var found = {};
    // The first index >= from where `what` (a string, or a NEEDLES name)
    // occurs, or -1. Remembered per needle, searched again only past it.
    function next(what, from) {
      var f = found[what];
      if (f && from >= f.from && (f.at < 0 || from <= f.at)) return f.at;
      var at;
      if (NEEDLES[what]) {
        var re = NEEDLES[what];
        re.lastIndex = from;
        var m = re.exec(s);
        at = m ? m.index : -1;
      } else at = s.indexOf(what, from);
      found[what] = { from: from, at: at };
      return at;
    }
    var at = 0, i = 0, n = s.length;
    function emit(node, from, to) {
      if (from > at) into.appendChild(document.createTextNode(s.slice(at, from)));
      into.appendChild(node);
      at = i = to;
    }
    while (i < n) {
      var c = s.charAt(i), j;
      if (c === '`') {
        var k = 1;
        while (s.charAt(i + k) === '`') k++;
        j = next('`', i + k);
        if (j < 0) { i += k; continue; }
        var r = 1;
        while (s.charAt(j + r) === '`') r++;
        if (r >= k) emit(K.h('code', { text: s.slice(i + k, j) }), i, j + k);
        else i += k - r;
        continue;
      }
      if ((c === '*' || c === '_') && s.charAt(i + 1) === c && (j = next(c + c, i + 3)) >= 0) {
        emit(inline(s.slice(i + 2, j), K.h('strong')), i, j + 2);
        continue;
      }
      if ((c === '*' || c === '_') && (j = next(c, i + 2)) >= 0) {
        emit(inline(s.slice(i + 1, j), K.h('em')), i, j + 1);
        continue;
      }
      if (c === '[' && (j = next(']', i + 1)) > i + 1 && s.charAt(j + 1) === '(') {
        var close = next(')', j + 2), ws = next('ws', j + 2);
        if (close > j + 2 && (ws < 0 || ws > close)) {
          var u = K.safeUrl(s.slice(j + 2, close));
          if (u) { var a = K.link(u, ''); inline(s.slice(i + 1, j), a); emit(a, i, close + 1); }
          else i = close + 1;
          continue;
        }
      }
      if (c === 'h' && /^https?:\/\//.test(s.substr(i, 8))) {
        var from = i + (s.charAt(i + 4) === 's' ? 8 : 7), end = next('url', from);
        if (end < 0) end = n;
        if (end > from) { emit(K.link(s.slice(i, end)), i, end); continue; }
      }
      i++;
    }
    if (at < n) into.appendChild(document.createTextNode(s.slice(at)));
    return into;
  }
  var box = K.h('div', { className: 'md' });
  var lines = text.replace(/\r\n?/g, '\n').split('\n');
  var para = [], list = null;
  function flush() {
    if (para.length) box.appendChild(inline(para.join(' '), K.h('p')));
    para = [];
    list = null;
  }
  for (var i = 0; i < lines.length; i++) {
    var line = lines[i], m;
    if (/^\s*```/.test(line)) {
      flush();
      var code = [];
      while (++i < lines.length && !/^\s*```/.test(lines[i])) code.push(lines[i]);
      box.appendChild(K.h('pre', {}, [K.h('code', { text: code.join('\n') })]));
    } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      flush();
      box.appendChild(inline(m[2], K.h('h' + Math.min(6, m[1].length + 2))));
    } else if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
      if (para.length) flush();
      var tag = /\d/.test(m[1]) ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== tag) { list = box.appendChild(K.h(tag)); }
      list.appendChild(inline(m[2], K.h('li')));
    } else if ((m = /^>\s?(.*)$/.exec(line))) {
      flush();
      box.appendChild(inline(m[1], K.h('blockquote')));
    } else if (/^\s*$/.test(line)) flush();
    else { list = null; para.push(line.trim()); }
  }
  flush();
  root.appendChild(box);
}
