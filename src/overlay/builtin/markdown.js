// builtin:markdown: a text as Markdown, safely: every character is text (the
// DOM is built node by node, never from HTML), and only http(s) links are links.
function kitRender(text, K, root) {
  'use strict';
  if (typeof text !== 'string') text = text == null ? '' : JSON.stringify(text, null, 2);
  var INLINE = /(`+)([^`]+?)\1|\*\*(.+?)\*\*|__(.+?)__|\*(.+?)\*|_(.+?)_|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+)/g;
  function inline(s, into) {
    var at = 0, m;
    INLINE.lastIndex = 0;
    var found = [];
    while ((m = INLINE.exec(s))) found.push([m.index, m[0].length, m.slice()]);
    found.forEach(function (f) {
      var g = f[2];
      if (f[0] > at) into.appendChild(document.createTextNode(s.slice(at, f[0])));
      if (g[2] !== undefined) into.appendChild(K.h('code', { text: g[2] }));
      else if (g[3] !== undefined || g[4] !== undefined) inline(g[3] || g[4], into.appendChild(K.h('strong')));
      else if (g[5] !== undefined || g[6] !== undefined) inline(g[5] || g[6], into.appendChild(K.h('em')));
      else if (g[7] !== undefined) {
        var u = K.safeUrl(g[8]);
        if (u) { var a = K.link(u, ''); inline(g[7], a); into.appendChild(a); }
        else into.appendChild(document.createTextNode(g[0]));
      } else into.appendChild(K.link(g[9]));
      at = f[0] + f[1];
    });
    if (at < s.length) into.appendChild(document.createTextNode(s.slice(at)));
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
