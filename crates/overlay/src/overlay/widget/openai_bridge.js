// window.openai on the MCP Apps ui/* bridge. The gateway puts this script
// first in the document of a widget written against ChatGPT's Apps SDK, so
// the widget runs in every MCP Apps host. Where window.openai exists
// already (ChatGPT, /preview), it does nothing.
(function () {
  if (window.openai || window.parent === window) return;
  var host = window.parent;
  var seq = 0;
  var pending = {};
  var stateKey = null;
  var g = {
    theme: 'light', locale: navigator.language || 'en-US', displayMode: 'inline', maxHeight: null,
    view: { mode: 'inline', params: null }, safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } },
    userAgent: { device: { type: 'unknown' }, capabilities: { hover: true, touch: false } },
    toolInput: {}, toolOutput: null, toolResponseMetadata: null, widgetState: null
  };

  function post(m) { host.postMessage(m, '*'); }
  function notify(method, params) { post({ jsonrpc: '2.0', method: method, params: params || {} }); }
  function request(method, params) {
    var id = 'openai-bridge:' + (++seq);
    return new Promise(function (ok, fail) {
      pending[id] = { ok: ok, fail: fail };
      post({ jsonrpc: '2.0', id: id, method: method, params: params || {} });
    });
  }
  // Globals change: window.openai reads them, the Apps SDK's hooks hear the event.
  function set(partial) {
    for (var k in partial) g[k] = partial[k];
    window.dispatchEvent(new CustomEvent('openai:set_globals', { detail: { globals: partial } }));
  }
  function fromContext(c) {
    var p = {};
    if (!c) return p;
    if (c.theme) p.theme = c.theme;
    if (c.locale) p.locale = c.locale;
    if (c.displayMode) { p.displayMode = c.displayMode; p.view = { mode: c.displayMode, params: null }; }
    var d = c.containerDimensions;
    if (d && (d.maxHeight || d.height)) p.maxHeight = d.maxHeight || d.height;
    if (c.safeAreaInsets) p.safeArea = { insets: c.safeAreaInsets };
    if (c.platform || c.deviceCapabilities) {
      var caps = c.deviceCapabilities || {};
      p.userAgent = {
        device: { type: c.platform === 'mobile' ? 'mobile' : c.platform ? 'desktop' : 'unknown' },
        capabilities: { hover: caps.hover !== false, touch: !!caps.touch }
      };
    }
    return p;
  }
  function unsupported(name) {
    return function () {
      return Promise.reject(new Error('window.openai.' + name + ' has no counterpart in the MCP Apps bridge this host speaks'));
    };
  }
  // Widget state outlives the frame where the frame's origin keeps storage,
  // keyed by the tool call.
  function store(value) {
    try { if (stateKey) localStorage.setItem(stateKey, JSON.stringify(value)); } catch (e) { /* no storage here */ }
  }
  function restore() {
    try {
      var saved = stateKey && localStorage.getItem(stateKey);
      if (saved) set({ widgetState: JSON.parse(saved) });
    } catch (e) { /* no storage here */ }
  }

  var api = {
    callTool: function (name, args) {
      return request('tools/call', { name: name, arguments: args || {} }).then(function (r) {
        var text = (r && r.content || []).filter(function (c) { return c && c.type === 'text'; })[0];
        var out = {};
        for (var k in r) out[k] = r[k];
        out.result = text ? text.text : '';
        out.meta = r && r._meta;
        return out;
      });
    },
    sendFollowUpMessage: function (o) {
      var text = String(o && o.prompt || '');
      return request('ui/message', { role: 'user', content: [{ type: 'text', text: text }] }).then(function () {});
    },
    openExternal: function (o) { return request('ui/open-link', { url: String(o && o.href || '') }).then(function () {}); },
    requestDisplayMode: function (o) {
      return request('ui/request-display-mode', { mode: o && o.mode }).then(function (r) {
        var mode = r && r.mode || g.displayMode;
        set({ displayMode: mode, view: { mode: mode, params: null } });
        return { mode: mode };
      });
    },
    setWidgetState: function (s) {
      set({ widgetState: s });
      store(s);
      return request('ui/update-model-context', { structuredContent: { widgetState: s } }).then(function () {});
    },
    notifyIntrinsicHeight: function (h) { notify('ui/notifications/size-changed', { height: Math.ceil(Number(h) || 0) }); },
    requestClose: function () { notify('ui/notifications/request-teardown'); },
    requestModal: unsupported('requestModal'),
    uploadFile: unsupported('uploadFile'),
    selectFiles: unsupported('selectFiles'),
    getFileDownloadUrl: unsupported('getFileDownloadUrl'),
    requestCheckout: unsupported('requestCheckout'),
    setOpenInAppUrl: unsupported('setOpenInAppUrl')
  };
  Object.keys(g).forEach(function (k) {
    Object.defineProperty(api, k, { enumerable: true, get: function () { return g[k]; } });
  });
  window.openai = api;

  window.addEventListener('message', function (ev) {
    var m = ev.data;
    if (ev.source !== host || !m || m.jsonrpc !== '2.0') return;
    if (m.method === undefined) {
      var w = pending[m.id];
      if (!w) return;
      delete pending[m.id];
      if (m.error) w.fail(new Error(m.error.message || 'error ' + m.error.code)); else w.ok(m.result);
      return;
    }
    var p = m.params || {};
    if (m.method === 'ui/notifications/tool-input') set({ toolInput: p.arguments || {} });
    else if (m.method === 'ui/notifications/tool-result') {
      set({ toolOutput: p.structuredContent === undefined ? null : p.structuredContent,
        toolResponseMetadata: p._meta === undefined ? null : p._meta });
    } else if (m.method === 'ui/notifications/host-context-changed') set(fromContext(p));
    else if (m.id !== undefined) {
      post(m.method === 'ping' || m.method === 'ui/resource-teardown' ? { jsonrpc: '2.0', id: m.id, result: {} }
        : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found: ' + m.method } });
    }
  });

  // The content's own height (a document as tall as its frame would never
  // report less), on every change.
  var sent = 0;
  function size() {
    var html = document.documentElement;
    var was = html.style.height;
    html.style.height = 'max-content';
    var height = Math.ceil(html.getBoundingClientRect().height);
    html.style.height = was;
    if (height && height !== sent) { sent = height; notify('ui/notifications/size-changed', { height: height }); }
  }

  request('ui/initialize', {
    appInfo: { name: 'window.openai', version: '1.0.0' }, appCapabilities: {}, protocolVersion: '2026-01-26'
  }).then(function (r) {
    var c = r && r.hostContext || {};
    set(fromContext(c));
    var id = c.toolInfo && c.toolInfo.id;
    if (id != null) { stateKey = 'openai-widget-state:' + id; restore(); }
    notify('ui/notifications/initialized');
    if (window.ResizeObserver) {
      var watch = new ResizeObserver(size);
      watch.observe(document.documentElement);
      var body = function () { if (document.body) watch.observe(document.body); size(); };
      if (document.body) body(); else document.addEventListener('DOMContentLoaded', body);
    }
  }, function () {});
})();
