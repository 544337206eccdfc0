// window.openai on the MCP Apps ui/* bridge. The gateway puts this script
// first in the document of a widget written against ChatGPT's Apps SDK, so
// the widget runs in every MCP Apps host. Where window.openai exists
// already (ChatGPT, /preview), it does nothing.
(function () {
  if (window.openai || window.parent === window) return;
  var host = window.parent;
  var seq = 0;
  var pending = Object.create(null);
  // Widget state: at most 1 MiB of JSON text (a fifth of what a browser
  // keeps for an origin).
  var MAX_STATE = 1048576;
  var PREFIX = 'openai-widget-state:';
  var bound = null;
  var g = {
    theme: 'light', locale: navigator.language || 'en-US', displayMode: 'inline', maxHeight: null,
    view: { mode: 'inline', params: null }, safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } },
    userAgent: { device: { type: 'unknown' }, capabilities: { hover: true, touch: false } },
    // toolInput stays empty until the host's ui/notifications/tool-input:
    // ChatGPT sends a call's arguments only once the user approved it.
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
  // The host's CSS variables (hostContext.styles.variables, which ChatGPT
  // sends since May 2026, developers.openai.com/plugins/changelog) set on the
  // document root, as the MCP Apps SDK's applyHostStyleVariables does.
  // window.openai has no field for them: its globals are the theme, locale,
  // layout and tool data only.
  function styles(c) {
    var vars = c && c.styles && c.styles.variables;
    if (!vars || typeof vars !== 'object') return;
    Object.keys(vars).forEach(function (k) {
      if (/^--[\w-]+$/.test(k) && typeof vars[k] === 'string') document.documentElement.style.setProperty(k, vars[k]);
    });
  }
  function unsupported(name) {
    return function () {
      return Promise.reject(new Error('window.openai.' + name + ' has no counterpart in the MCP Apps bridge this host speaks'));
    };
  }
  // Widget state outlives the frame where the frame's origin keeps storage:
  // a record naming the widget and the call, under a key made of both and
  // checked again on restore, so what another document of the origin wrote
  // for another widget or call (or under a key of its own) is never taken.
  // A full storage gives up the bridge's oldest records first.
  function store(json) {
    var key = PREFIX + JSON.stringify(bound);
    var record = JSON.stringify({ widget: bound[0], call: bound[1], at: Date.now() }).slice(0, -1) + ',"state":' + json + '}';
    try {
      for (;;) {
        try { return localStorage.setItem(key, record); } catch (e) {
          var oldest = null, at = Infinity;
          for (var i = 0; i < localStorage.length; i++) {
            var k = localStorage.key(i), t = k !== key && k.indexOf(PREFIX) === 0 && /"at":(\d+)/.exec(localStorage.getItem(k));
            if (t && +t[1] < at) { at = +t[1]; oldest = k; }
          }
          if (!oldest) throw e;
          localStorage.removeItem(oldest);
        }
      }
    } catch (e) {
      // A frame without storage (an opaque origin) keeps state for no remount, by design.
      if (e.name !== 'SecurityError') console.warn('window.openai.setWidgetState: not kept for a remount (' + e.message + ')');
    }
  }
  function restore() {
    try {
      var saved = JSON.parse(localStorage.getItem(PREFIX + JSON.stringify(bound)));
      if (saved.widget === bound[0] && JSON.stringify(saved.call) === JSON.stringify(bound[1]) && 'state' in saved) {
        set({ widgetState: saved.state });
      }
    } catch (e) { /* none, or no storage here */ }
  }
  function refuse(why) {
    var e = new Error('window.openai.setWidgetState: ' + why + '; neither kept nor sent');
    console.warn(e.message);
    return Promise.reject(e);
  }

  var api = {
    callTool: function (name, args) {
      return request('tools/call', { name: name, arguments: args || {} }).then(function (r) {
        // The result's own keys defined, not assigned: a "__proto__" key
        // stays a key and never becomes the object's prototype.
        var out = {};
        Object.keys(Object(r)).forEach(function (k) {
          Object.defineProperty(out, k, { value: r[k], enumerable: true, writable: true, configurable: true });
        });
        var text = [].concat(out.content || []).filter(function (c) { return c && c.type === 'text'; })[0];
        out.result = text ? String(text.text) : '';
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
      var json;
      try { json = JSON.stringify(s) || 'null'; } catch (e) { return refuse(e.message); }
      if (json.length > MAX_STATE) return refuse(json.length + ' characters of JSON, over the limit of ' + MAX_STATE);
      set({ widgetState: s });
      if (bound) store(json);
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
    } else if (m.method === 'ui/notifications/host-context-changed') { styles(p); set(fromContext(p)); }
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
    styles(c);
    set(fromContext(c));
    var info = c.toolInfo || {}, meta = info.tool && info.tool._meta || {};
    var uri = meta.ui && meta.ui.resourceUri || meta['ui/resourceUri'] || meta['openai/outputTemplate'];
    if (info.id != null && typeof uri === 'string') { bound = [uri, info.id]; restore(); }
    notify('ui/notifications/initialized');
    if (window.ResizeObserver) {
      var watch = new ResizeObserver(size);
      watch.observe(document.documentElement);
      var body = function () { if (document.body) watch.observe(document.body); size(); };
      if (document.body) body(); else document.addEventListener('DOMContentLoaded', body);
    }
  }, function () {});
})();
