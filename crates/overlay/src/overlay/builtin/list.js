// builtin:list: an array as a list, each item with a primary and a secondary line.
function kitRender(items, K, root) {
  'use strict';
  if (!Array.isArray(items)) { root.appendChild(K.note('The data is not a list.', 'error')); return; }
  if (!items.length) { root.appendChild(K.note(K.opts.empty || 'Nothing to show.')); return; }
  var first = items[0] && typeof items[0] === 'object' ? items[0] : {};
  function guess(names, skip) {
    for (var i = 0; i < names.length; i++) if (names[i] in first && names[i] !== skip) return names[i];
    return Object.keys(first).filter(function (k) { return typeof first[k] === 'string' && k !== skip; })[0];
  }
  var primary = K.opts.primary || guess(['title', 'name', 'label', 'summary']);
  var secondary = K.opts.secondary || guess(['description', 'subtitle', 'detail', 'status'], primary);
  root.appendChild(K.h('ul', { className: 'list' }, items.map(function (it) {
    if (it == null || typeof it !== 'object') return K.h('li', {}, [K.show(it)]);
    var one = primary ? K.show(K.get(it, primary)) : JSON.stringify(it);
    var two = secondary ? K.show(K.get(it, secondary)) : '';
    return K.h('li', {}, [K.h('strong', {}, [one]), two === '' ? null : K.h('span', { className: 'second' }, [two]), K.actions(it, typeof one === 'string' ? one : one.textContent)]);
  })));
}
