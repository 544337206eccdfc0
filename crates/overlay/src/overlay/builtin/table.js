// builtin:table: an array of records as a table with sortable columns; on a
// phone-width frame each row stacks its cells under their labels.
var kitSort = null;
function kitRender(rows, K, root) {
  'use strict';
  if (!Array.isArray(rows)) { root.appendChild(K.note('The data is not a list.', 'error')); return; }
  var cols = K.opts.columns || K.keysOf(rows, true);
  if (!rows.length || !cols.length) { root.appendChild(K.note(K.opts.empty || 'Nothing to show.')); return; }
  if (kitSort === null) {
    var s = K.opts.sort || '';
    kitSort = { key: s.replace(/^-/, ''), desc: s.charAt(0) === '-' };
  }
  var heads = [];
  var body = K.h('tbody');
  var table = K.h('table', { className: 'stack' }, [
    K.h('caption', { className: 'sr', text: (K.opts.heading ? K.opts.heading + ', ' : '') + rows.length + (rows.length === 1 ? ' row' : ' rows') }),
    K.h('thead', {}, [K.h('tr', {}, cols.map(function (c) {
      var b = K.h('button', { type: 'button' }, [K.title(c), K.h('span', { 'aria-hidden': 'true' })]);
      var th = K.h('th', { scope: 'col', className: K.numeric(c) ? 'num' : '' }, [b]);
      b.addEventListener('click', function () {
        kitSort = { key: c.key, desc: kitSort.key === c.key && !kitSort.desc };
        fill();
        K.announce('Sorted by ' + K.title(c) + ', ' + (kitSort.desc ? 'descending' : 'ascending') + '.');
      });
      heads.push({ col: c, th: th, button: b });
      return th;
    }).concat(K.opts.actions ? [K.h('th', { scope: 'col', text: 'Actions' })] : []))]),
    body
  ]);
  function cmp(a, b) {
    if (a == null || a === '') return b == null || b === '' ? 0 : 1;
    if (b == null || b === '') return -1;
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? -1 : 1;
    return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' });
  }
  // Rows are drawn a batch at a time: 40,000 at once keep the frame busy
  // for seconds; the rest come on request, in the order in force.
  var BATCH = 500, limit = BATCH;
  var more = K.h('p', { className: 'note more' });
  function fill() {
    var order = rows.slice();
    if (kitSort.key) {
      var c = cols.filter(function (x) { return x.key === kitSort.key; })[0] || { key: kitSort.key };
      order.sort(function (x, y) {
        var r = cmp(K.get(x, c.key), K.get(y, c.key));
        var empty = K.get(x, c.key) == null || K.get(y, c.key) == null;
        return kitSort.desc && !empty ? -r : r;
      });
    }
    heads.forEach(function (hd) {
      var on = hd.col.key === kitSort.key;
      if (on) hd.th.setAttribute('aria-sort', kitSort.desc ? 'descending' : 'ascending');
      else hd.th.removeAttribute('aria-sort');
      hd.button.lastChild.textContent = on ? (kitSort.desc ? '\u25BC' : '\u25B2') : '';
      hd.button.setAttribute('aria-label', 'Sort by ' + K.title(hd.col) + (on && !kitSort.desc ? ', descending' : ''));
    });
    body.textContent = '';
    more.textContent = '';
    var num = function (n) { return K.show(n, { format: 'number' }); };
    if (order.length > limit) {
      var next = K.h('button', { type: 'button' }, ['Show ' + num(Math.min(BATCH, order.length - limit)) + ' more']);
      next.addEventListener('click', function () { limit += BATCH; fill(); });
      more.appendChild(document.createTextNode('Showing ' + num(limit) + ' of ' + num(order.length) + ' rows. '));
      more.appendChild(next);
      order = order.slice(0, limit);
    }
    order.forEach(function (row) {
      var cells = cols.map(function (c) {
        var v = K.show(K.get(row, c.key), c);
        return K.h('td', { 'data-label': K.title(c), className: K.numeric(c) || typeof K.get(row, c.key) === 'number' ? 'num' : '' }, [v]);
      });
      var acts = K.actions(row, cells[0].textContent);
      if (acts) cells.push(K.h('td', { 'data-label': 'Actions' }, [acts]));
      body.appendChild(K.h('tr', {}, cells));
    });
  }
  fill();
  root.appendChild(K.h('div', { className: 'scroll' }, [table]));
  root.appendChild(more);
}
