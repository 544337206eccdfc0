// builtin:kv: one object as key/value pairs.
function kitRender(obj, K, root) {
  'use strict';
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) { root.appendChild(K.note('The data is not one record.', 'error')); return; }
  var fields = K.opts.fields || K.keysOf([obj], false);
  var blank = function (f) { var v = K.get(obj, f.key); return v == null || v === ''; };
  if (!fields.length || fields.every(blank)) { root.appendChild(K.note(K.opts.empty || 'Nothing to show.')); return; }
  var dl = K.h('dl');
  fields.forEach(function (f) {
    dl.appendChild(K.h('dt', { text: K.title(f) }));
    dl.appendChild(K.h('dd', {}, [K.show(K.get(obj, f.key), f)]));
  });
  root.appendChild(dl);
}
