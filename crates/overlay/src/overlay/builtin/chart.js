// builtin:chart: an array of records as a bar or line chart, one series per
// numeric field, drawn as SVG (nothing loaded), with the same numbers in a
// table for screen readers.
function kitRender(rows, K, root) {
  'use strict';
  if (!Array.isArray(rows)) { root.appendChild(K.note('The data is not a list.', 'error')); return; }
  var o = K.opts;
  var first = rows.filter(function (r) { return r && typeof r === 'object'; })[0] || {};
  var x = o.x || Object.keys(first).filter(function (k) { return typeof first[k] === 'string'; })[0];
  var ys = o.y || Object.keys(first).filter(function (k) { return typeof first[k] === 'number'; }).map(function (k) { return { key: k }; });
  if (!rows.length || !ys.length) { root.appendChild(K.note(o.empty || 'Nothing to show.')); return; }
  var NS = 'http://www.w3.org/2000/svg';
  var colors = ['var(--accent)', '#e8590c', '#2f9e44', '#ae3ec9', '#e64980', '#1098ad'];
  function s(tag, attrs, kids) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (c) { e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function num(v) { var n = typeof v === 'number' ? v : Number(v); return isFinite(n) ? n : null; }
  function label(r, i) {
    var v = x ? K.show(K.get(r, x)) : '';
    if (v && v.nodeType) v = v.textContent;
    return typeof v === 'string' && v !== '' ? v : String(i + 1);
  }
  var lo = 0, hi = 0;
  rows.forEach(function (r) { ys.forEach(function (f) { var n = num(K.get(r, f.key)); if (n !== null) { lo = Math.min(lo, n); hi = Math.max(hi, n); } }); });
  if (hi === lo) hi = lo + 1;
  // Halves, so that no difference of two finite numbers overflows
  // (1.7e308 - -1.7e308 is Infinity; half of each is not).
  var span = hi / 2 - lo / 2;
  if (!(span > 0)) { lo = 0; hi = 1; span = 0.5; }
  // A round step, so the axis reads 0, 25, 50 and not 0, 23.7, 47.4.
  var raw = span / 2, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; }).filter(function (v) { return v >= raw; })[0];
  var roundHi = Math.ceil(hi / step) * step, roundLo = Math.floor(lo / step) * step;
  var ticks = [];
  if (step > 0 && isFinite(step) && isFinite(roundHi) && isFinite(roundLo)) {
    lo = roundLo; hi = roundHi; span = hi / 2 - lo / 2;
    for (var k = 0; k <= 16; k++) {
      var t = (Math.round(lo / step) + k) * step;
      if (!isFinite(t) || t > hi + step / 2) break;
      ticks.push(t);
    }
  } else {
    // Rounded, the axis would pass the largest number there is: five ticks
    // between the values themselves, each a mean that cannot overflow.
    for (var q = 0; q <= 4; q++) ticks.push(lo * (1 - q / 4) + hi * (q / 4));
  }
  var W = 640, H = 280, L = 56, R = 8, T = 10, B = 34, pw = W - L - R, ph = H - T - B;
  function Y(v) { return T + ph - (v / 2 - lo / 2) / span * ph; }
  var band = pw / rows.length;
  var g = s('g', {});
  ticks.forEach(function (t) {
    g.appendChild(s('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t), 'class': 'axis' }));
    g.appendChild(s('text', { x: L - 6, y: Y(t) + 4, 'text-anchor': 'end' }, [String(K.show(t, ys[0].format === 'currency' ? ys[0] : { format: 'number' }))]));
  });
  var every = Math.ceil(rows.length / 12), fit = Math.max(3, Math.floor(band * every / 6.5));
  rows.forEach(function (r, i) {
    var t = label(r, i);
    if (i % every === 0) g.appendChild(s('text', { x: L + band * (i + 0.5), y: H - B + 16, 'text-anchor': 'middle' }, [t.length > fit ? t.slice(0, fit - 1) + '\u2026' : t]));
  });
  ys.forEach(function (f, j) {
    var color = colors[j % colors.length], pts = [];
    rows.forEach(function (r, i) {
      var v = num(K.get(r, f.key));
      if (v === null) return;
      var tip = s('title', {}, [label(r, i) + ', ' + K.title(f) + ': ' + K.show(v, f)]);
      if (o.type === 'line') {
        var cx = L + band * (i + 0.5);
        pts.push(cx + ',' + Y(v));
        g.appendChild(s('circle', { cx: cx, cy: Y(v), r: 3.5, fill: color }, [tip]));
      } else {
        var w = band * 0.8 / ys.length, top = Math.min(Y(v), Y(0));
        g.appendChild(s('rect', { x: L + band * (i + 0.1) + w * j, y: top, width: Math.max(w - 1, 1), height: Math.max(Math.abs(Y(v) - Y(0)), 1), fill: color, rx: 2 }, [tip]));
      }
    });
    if (pts.length) g.insertBefore(s('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 2 }), g.firstChild);
  });
  g.appendChild(s('line', { x1: L, x2: W - R, y1: Y(0), y2: Y(0), stroke: 'currentColor', 'stroke-opacity': 0.4 }));
  var name = ys.map(K.title).join(', ') + (x ? ' by ' + K.title({ key: x }) : '');
  var svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-hidden': 'true' }, [g]);
  var box = K.h('figure', { className: 'chart', style: 'margin:0' });
  box.appendChild(svg);
  if (ys.length > 1) box.appendChild(K.h('ul', { className: 'legend', 'aria-hidden': 'true' }, ys.map(function (f, j) {
    return K.h('li', {}, [K.h('i', { style: 'background:' + colors[j % colors.length] }), K.title(f)]);
  })));
  // Tables ignore overflow, so the hidden one sits in a hidden block.
  box.appendChild(K.h('div', { className: 'sr' }, [K.h('table', {}, [
    K.h('caption', { text: name }),
    K.h('tr', {}, [K.h('th', { scope: 'col', text: x ? K.title({ key: x }) : '#' })].concat(ys.map(function (f) { return K.h('th', { scope: 'col', text: K.title(f) }); }))),
  ].concat(rows.map(function (r, i) {
    return K.h('tr', {}, [K.h('th', { scope: 'row', text: label(r, i) })].concat(ys.map(function (f) { return K.h('td', {}, [K.show(K.get(r, f.key), f)]); })));
  })))]));
  root.appendChild(box);
}
