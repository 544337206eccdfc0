// Runs a compiled built-in widget's script under Node, in a document just
// large enough for it, as an MCP Apps host would drive it: reads
// { html, steps } as JSON on stdin, answers the widget's ui/initialize,
// plays the steps, and prints { root, posted }: the widget's content as
// HTML and every message it posted to the host.
//
// Steps: { "message": m } delivers a host message (a tool result, a
// context change); { "click": "Label" } clicks the first button with that
// text; { "answer": result } answers the widget's last request.
'use strict';
const vm = require('vm');

function Text(data) { this.nodeType = 3; this.data = String(data); this.parentNode = null; }
Object.defineProperty(Text.prototype, 'textContent', { get() { return this.data; } });

function El(tag) {
  this.nodeType = 1;
  this.tagName = tag;
  this.attrs = {};
  this.childNodes = [];
  this.listeners = {};
  this.parentNode = null;
  this.style = { setProperty() {} };
}
El.prototype.appendChild = function (c) {
  if (c.parentNode) c.parentNode.removeChild(c);
  c.parentNode = this;
  this.childNodes.push(c);
  return c;
};
El.prototype.removeChild = function (c) {
  this.childNodes = this.childNodes.filter((x) => x !== c);
  c.parentNode = null;
  return c;
};
El.prototype.replaceChild = function (c, old) {
  if (c.parentNode) c.parentNode.removeChild(c);
  this.childNodes = this.childNodes.map((x) => (x === old ? c : x));
  old.parentNode = null;
  c.parentNode = this;
  return old;
};
El.prototype.setAttribute = function (k, v) { this.attrs[k] = String(v); };
El.prototype.getAttribute = function (k) { return k in this.attrs ? this.attrs[k] : null; };
El.prototype.removeAttribute = function (k) { delete this.attrs[k]; };
El.prototype.addEventListener = function (type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); };
El.prototype.focus = function () {};
El.prototype.all = function (out) {
  this.childNodes.forEach((c) => { if (c.nodeType === 1) { out.push(c); c.all(out); } });
  return out;
};
El.prototype.querySelectorAll = function (tag) { return this.all([]).filter((e) => e.tagName === tag); };
Object.defineProperty(El.prototype, 'className', {
  get() { return this.attrs.class || ''; },
  set(v) { this.attrs.class = String(v); },
});
Object.defineProperty(El.prototype, 'textContent', {
  get() { return this.childNodes.map((c) => c.textContent).join(''); },
  set(v) {
    this.childNodes.forEach((c) => { c.parentNode = null; });
    this.childNodes = [];
    if (v != null && v !== '') this.appendChild(new Text(v));
  },
});
Object.defineProperty(El.prototype, 'lastChild', { get() { return this.childNodes[this.childNodes.length - 1] || null; } });
Object.defineProperty(El.prototype, 'offsetHeight', { get() { return 10 * this.all([]).length; } });

function html(n) {
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  if (n.nodeType === 3) return esc(n.data);
  const attrs = Object.keys(n.attrs).map((k) => ` ${k}="${esc(n.attrs[k])}"`).join('');
  return `<${n.tagName}${attrs}>${n.childNodes.map(html).join('')}</${n.tagName}>`;
}

const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const options = /<script type="application\/json" id="view-options">([\s\S]*?)<\/script>/.exec(input.html)[1];
const script = /<script>([\s\S]*?)<\/script>/.exec(input.html)[1];

const ids = { 'view-options': new El('script'), root: new El('main'), status: new El('p') };
ids['view-options'].textContent = options;
const body = new El('body');
body.appendChild(ids.root);
const document = {
  getElementById: (id) => ids[id] || null,
  createElement: (tag) => new El(tag),
  createElementNS: (ns, tag) => new El(tag),
  createTextNode: (t) => new Text(t),
  documentElement: new El('html'),
  body,
};
const posted = [];
const listeners = [];
const parent = { postMessage: (m) => posted.push(JSON.parse(JSON.stringify(m))) };
const window = {
  document,
  parent,
  navigator: { language: 'en-US' },
  addEventListener: (type, fn) => { if (type === 'message') listeners.push(fn); },
};
window.window = window;
vm.runInNewContext(script, window);

const deliver = (m) => listeners.forEach((fn) => fn({ data: m, source: parent }));
const settle = () => new Promise((ok) => setImmediate(ok));
const answer = (method, result) => {
  const req = posted.filter((m) => m.id !== undefined && (!method || m.method === method)).pop();
  deliver({ jsonrpc: '2.0', id: req.id, result });
};

(async () => {
  answer('ui/initialize', { hostContext: { theme: 'light', locale: 'en-US' } });
  await settle();
  for (const step of input.steps) {
    if (step.message) deliver(Object.assign({ jsonrpc: '2.0' }, step.message));
    else if (step.click) {
      const button = ids.root.querySelectorAll('button').filter((b) => b.textContent === step.click)[0];
      if (!button) throw new Error(`no button "${step.click}" in ${html(ids.root)}`);
      (button.listeners.click || []).forEach((fn) => fn({ preventDefault() {} }));
    } else if (step.answer) answer(null, step.answer);
    await settle();
  }
  process.stdout.write(JSON.stringify({ root: html(ids.root), posted }));
})().catch((e) => { console.error(e); process.exit(1); });
