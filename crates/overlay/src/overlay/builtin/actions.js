// The actions of a record: one button per action, calling a tool of the
// same server with arguments taken from the record ("/id" is the record's
// id), asking first when the action says so, then showing the outcome and
// refreshing the data.
function kitActions(rec, K, name) {
  'use strict';
  var box = K.h('div', { className: 'actions' });
  // Every string starting with "/", however deep in arrays and tables, is
  // a JSON pointer into the record ({ ids = ["/id"] } sends the record's id
  // in an array); anything else is sent as written. JSON.parse keeps a
  // "__proto__" key a key.
  function args(a) {
    return JSON.parse(JSON.stringify(a.arguments), function (k, v) {
      return typeof v === 'string' && v.charAt(0) === '/' ? K.get(rec, v) : v;
    });
  }
  function run(a) {
    Array.prototype.forEach.call(box.querySelectorAll('button'), function (b) { b.disabled = true; });
    box.setAttribute('aria-busy', 'true');
    K.call(a.tool, args(a)).then(function (r) {
      if (r && r.isError) K.done(a.label + ' failed: ' + (K.text(r) || 'the tool reported an error.'), true);
      else K.done(a.label + ': done.');
    }, function (e) { K.done(a.label + ' failed: ' + e.message, true); });
  }
  // An inline question (dialogs are blocked in sandboxed frames): Yes runs
  // the action, Cancel or Escape puts the buttons back.
  function ask(a, from) {
    var yes = K.h('button', { type: 'button', className: 'primary', text: 'Yes' });
    var no = K.h('button', { type: 'button', text: 'Cancel' });
    var q = K.h('span', { className: 'confirm', role: 'group', 'aria-label': a.confirm }, [K.h('span', { text: a.confirm }), yes, no]);
    function back() { box.replaceChild(from, q); from.focus(); }
    yes.addEventListener('click', function () { box.replaceChild(from, q); run(a); });
    no.addEventListener('click', back);
    q.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') back(); });
    box.replaceChild(q, from);
    yes.focus();
  }
  K.opts.actions.forEach(function (a) {
    var b = K.h('button', { type: 'button', text: a.label });
    if (name) b.setAttribute('aria-label', a.label + ': ' + name);
    var row = K.h('span', {}, [b]);
    b.addEventListener('click', function () { if (a.confirm) ask(a, row); else run(a); });
    box.appendChild(row);
  });
  return box;
}
