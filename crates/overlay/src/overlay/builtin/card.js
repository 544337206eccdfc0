// builtin:card: one record (or each of a list of them) as a card: image,
// title, subtitle and fields.
function kitRender(data, K, root) {
  'use strict';
  var list = Array.isArray(data) ? data : [data];
  if (!list.length) { root.appendChild(K.note(K.opts.empty || 'Nothing to show.')); return; }
  var o = K.opts;
  var used = [o.title, o.subtitle, o.image];
  var box = K.h('div', { className: 'cards' });
  list.forEach(function (rec) {
    if (!rec || typeof rec !== 'object') { box.appendChild(K.h('section', { className: 'card' }, [K.show(rec)])); return; }
    var tkey = o.title || ['title', 'name', 'label'].filter(function (k) { return k in rec; })[0];
    var fields = o.fields || K.keysOf([rec], false).filter(function (f) { return used.indexOf(f.key) < 0 && f.key !== tkey; });
    var img = o.image && K.safeUrl(K.get(rec, o.image), true);
    var dl = K.h('dl');
    fields.forEach(function (f) {
      dl.appendChild(K.h('dt', { text: K.title(f) }));
      dl.appendChild(K.h('dd', {}, [K.show(K.get(rec, f.key), f)]));
    });
    var sub = o.subtitle ? K.show(K.get(rec, o.subtitle)) : '';
    box.appendChild(K.h('section', { className: 'card' }, [
      img ? K.h('img', { src: img, alt: '' }) : null,
      tkey ? K.h('h3', {}, [K.show(K.get(rec, tkey))]) : null,
      sub === '' ? null : K.h('span', { className: 'second' }, [sub]),
      fields.length ? dl : null,
      K.actions(rec, tkey ? String(K.get(rec, tkey)) : '')
    ]));
  });
  root.appendChild(box);
}
