// The built-in widgets' core: reads the options, speaks the MCP Apps bridge
// (JSON-RPC 2.0 over postMessage) and window.openai, follows the host's theme
// and locale, finds the data in the tool result, formats values, and reports
// the document's size. The kind's script (before this one) defines kitRender.
(function () {
  'use strict';
  var O = JSON.parse(document.getElementById('view-options').textContent);
  var root = document.getElementById('root');
  var status = document.getElementById('status');
  var openai = window.openai;
  var locale, last, bridged = false, seq = 0, waiting = {}, input = {}, flash = null;

  function send(m) { window.parent.postMessage(m, '*'); }
  function request(method, params) {
    var id = 'kit-' + (++seq);
    send({ jsonrpc: '2.0', id: id, method: method, params: params });
    return new Promise(function (ok, fail) { waiting[id] = { ok: ok, fail: fail }; });
  }

  function h(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'className') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function ptr(v, p) {
    if (!p) return v;
    var parts = p.split('/').slice(1);
    for (var i = 0; i < parts.length; i++) {
      if (v == null || typeof v !== 'object') return undefined;
      v = v[parts[i].replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    return v;
  }
  function get(row, key) { return key.charAt(0) === '/' ? ptr(row, key) : row == null ? undefined : row[key]; }
  function human(k) {
    var s = String(k).replace(/^\//, '').replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[\/_-]+/g, ' ').trim().toLowerCase();
    return s.charAt(0).toUpperCase() + s.slice(1);
  }
  function title(f) { return f.title || human(f.key); }
  function safeUrl(u, images) {
    if (typeof u !== 'string') return null;
    if (/^https?:\/\//i.test(u)) return u;
    return images && /^data:image\/(png|jpeg|gif|webp);/i.test(u) ? u : null;
  }
  function link(url, text) {
    var a = h('a', { href: url, rel: 'noopener noreferrer', target: '_blank', text: text || url });
    a.addEventListener('click', function (ev) {
      ev.preventDefault();
      if (openai && openai.openExternal) openai.openExternal({ href: url });
      else request('ui/open-link', { url: url }).catch(function () {});
    });
    return a;
  }
  function when(v) {
    var d = typeof v === 'number' ? new Date(v < 1e11 ? v * 1000 : v) : new Date(String(v));
    return isNaN(d) ? null : d;
  }
  // RFC 3339: a date-time with its offset, or a plain date.
  var ISO = /^\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d))?$/;
  // A value as text (or a link, or a <time> keeping the ISO text), with the
  // host's locale. A text that is an RFC 3339 date (and time) is one.
  function show(v, f) {
    var format = (f && f.format) || (ISO.test(v) ? (v.length > 10 ? 'datetime' : 'date') : 'text');
    if (v == null || v === '') return '';
    // An unknown currency or locale throws: plain text then.
    try {
      if (format === 'link') { var u = safeUrl(v); return u ? link(u) : String(v); }
      if (format === 'boolean' || typeof v === 'boolean') return v === true ? 'Yes' : v === false ? 'No' : String(v);
      if (format === 'date' || format === 'datetime') {
        var d = when(v);
        if (!d) return String(v);
        var o = format === 'date' ? { dateStyle: 'medium' } : { dateStyle: 'medium', timeStyle: 'short' };
        if (format === 'date' && /^\d{4}-\d\d-\d\d$/.test(v)) o.timeZone = 'UTC';
        var iso = typeof v === 'string' ? v : d.toISOString();
        return h('time', { datetime: iso, title: iso, text: new Intl.DateTimeFormat(locale, o).format(d) });
      }
      if (numeric(f)) {
        var n = Number(v);
        if (isNaN(n)) return String(v);
        var no = format === 'percent' ? { style: 'percent', maximumFractionDigits: 1 }
          : format === 'currency' ? { style: 'currency', currency: f.currency } : {};
        return new Intl.NumberFormat(locale, no).format(n);
      }
    } catch (e) {}
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  function numeric(f) { return f && /^(number|percent|currency)$/.test(f.format); }
  function keysOf(rows, scalars) {
    var keys = [];
    rows.slice(0, 50).forEach(function (r) {
      if (r && typeof r === 'object' && !Array.isArray(r)) Object.keys(r).forEach(function (k) {
        var v = r[k];
        if (keys.indexOf(k) < 0 && (!scalars || v == null || typeof v !== 'object')) keys.push(k);
      });
    });
    return keys.map(function (k) { return { key: k }; });
  }
  function note(text, cls) { return h('p', { className: 'note' + (cls ? ' ' + cls : ''), text: text }); }
  function announce(text) { status.textContent = text; }

  // A tool of the same server, called through the host: the MCP Apps
  // bridge, else window.openai.
  function call(name, args) {
    if (bridged) return request('tools/call', { name: name, arguments: args });
    if (openai && openai.callTool) return openai.callTool(name, args).then(function (r) {
      return r && r.structuredContent === undefined && typeof r.result === 'string' ? { content: [{ type: 'text', text: r.result }] } : r;
    });
    return Promise.reject(new Error('no host bridge'));
  }
  // After an action: the data fetched again by the refresh call, then shown
  // with a line saying how the action went (kept across redraws).
  function done(text, error) {
    flash = { text: text, error: error };
    var r = O.refresh;
    var show = function (res) { draw(res && !res.isError ? res : last); announce(text); };
    if (error || !r) show(last);
    else call(r.tool, r.input ? input : r.arguments).then(show, function () { show(last); });
  }

  var K = { opts: O, h: h, get: get, show: show, title: title, numeric: numeric,
    keysOf: keysOf, note: note, announce: announce, safeUrl: safeUrl, link: link,
    call: call, done: done, text: firstText };
  K.actions = typeof kitActions === 'function' && O.actions ? function (rec, name) { return kitActions(rec, K, name); } : function () { return null; };

  function firstText(r) {
    var c = r && Array.isArray(r.content) ? r.content : [];
    for (var i = 0; i < c.length; i++) if (c[i] && c[i].type === 'text') return String(c[i].text);
    return undefined;
  }
  // The structured data of a result: structuredContent, or its text as JSON.
  function structured(r) {
    var sc = r.structuredContent;
    var text = firstText(r);
    if (sc == null && text !== undefined && O.kind !== 'markdown') { try { sc = JSON.parse(text); } catch (e) { sc = undefined; } }
    return sc;
  }
  // The data the kind shows: at O.data in structuredContent, or the default.
  function pick(r) {
    var sc = structured(r);
    var text = firstText(r);
    if (O.data != null) return ptr(sc, O.data);
    var only = function (test) {
      if (!sc || typeof sc !== 'object' || Array.isArray(sc)) return undefined;
      var ks = Object.keys(sc).filter(function (k) { return test(sc[k]); });
      return ks.length === 1 ? sc[ks[0]] : undefined;
    };
    if (O.kind === 'table' || O.kind === 'list' || O.kind === 'chart') return Array.isArray(sc) ? sc : only(Array.isArray);
    if (O.kind === 'markdown') {
      if (typeof sc === 'string') return sc;
      var s = only(function (v) { return typeof v === 'string'; });
      return s !== undefined ? s : text;
    }
    return sc;
  }
  // Why the result gave the kind nothing to show, when it tells.
  function why(r) {
    var sc = structured(r), a = sc && typeof sc === 'object' ? Object.keys(sc).filter(function (k) { return Array.isArray(sc[k]); }) : [];
    return sc != null && O.data != null ? 'The result has nothing at ' + O.data + ' (view.data).'
      : a.length > 1 ? 'The result holds several lists (/' + a.join(', /') + '): set view.data in the overlay to one.'
      : 'The result holds no data to show here.';
  }

  function draw(r) {
    last = r;
    root.textContent = '';
    if (O.heading) root.appendChild(h('h2', { text: O.heading }));
    if (flash) root.appendChild(note(flash.text, flash.error ? 'error' : 'done'));
    if (r.isError) root.appendChild(note(firstText(r) || 'The tool reported an error.', 'error'));
    else {
      try {
        var v = pick(r);
        if (v === undefined) root.appendChild(note(why(r)));
        else kitRender(v, K, root);
      } catch (e) {
        // Nested too deep to walk, or another shape no kind can draw: say
        // so rather than keep waiting.
        say('This result cannot be shown here (' + e + ').', 'error');
      }
    }
    size();
  }
  // The widget's only content: why there is nothing else.
  function say(text, kind) {
    root.textContent = '';
    if (O.heading) root.appendChild(h('h2', { text: O.heading }));
    root.appendChild(note(text, kind));
    size();
  }

  function theme(t) { if (t === 'dark' || t === 'light') document.documentElement.setAttribute('data-theme', t); }
  function context(c) {
    if (!c) return;
    theme(c.theme);
    var vars = c.styles && c.styles.variables;
    if (vars && typeof vars === 'object') Object.keys(vars).forEach(function (k) {
      if (/^--[\w-]+$/.test(k) && typeof vars[k] === 'string') document.documentElement.style.setProperty(k, vars[k]);
    });
    if (c.displayMode) document.documentElement.setAttribute('data-display-mode', c.displayMode);
    if (c.locale && c.locale !== locale) { locale = c.locale; document.documentElement.lang = locale; if (last) draw(last); }
  }

  var sent = 0;
  function size() {
    // The content's own height: the document's scroll height never falls
    // below the frame's, so a widget reporting it could grow but not shrink.
    var height = document.body.offsetHeight;
    if (height === sent) return;
    sent = height;
    if (bridged) send({ jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: height } });
    else if (openai && openai.notifyIntrinsicHeight) openai.notifyIntrinsicHeight(height);
  }

  window.addEventListener('message', function (ev) {
    var m = ev.data;
    if (ev.source !== window.parent || !m || m.jsonrpc !== '2.0') return;
    if (m.method === undefined) {
      var w = waiting[m.id];
      if (w) { delete waiting[m.id]; if (m.error) w.fail(new Error(m.error.message)); else w.ok(m.result); }
      return;
    }
    var p = m.params || {};
    if (m.method === 'ui/notifications/tool-result') draw(p);
    else if (m.method === 'ui/notifications/tool-input') input = p.arguments || {};
    else if (m.method === 'ui/notifications/host-context-changed') context(p);
    else if (m.method === 'ui/notifications/tool-cancelled') say('The tool call was cancelled' + (p.reason ? ': ' + p.reason : '.'));
    else if (m.id !== undefined) {
      send(m.method === 'ping' || m.method === 'ui/resource-teardown' ? { jsonrpc: '2.0', id: m.id, result: {} }
        : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
  });

  window.addEventListener('openai:set_globals', function (ev) {
    var g = (ev.detail && ev.detail.globals) || {};
    context({ theme: g.theme, locale: g.locale, displayMode: g.displayMode });
    if (g.toolOutput != null && !bridged) draw({ structuredContent: g.toolOutput });
  });
  if (openai) {
    if (openai.toolInput) input = openai.toolInput;
    context({ theme: openai.theme, locale: openai.locale });
    if (openai.toolOutput != null) draw({ structuredContent: openai.toolOutput });
  }
  if (!locale) locale = navigator.language;

  request('ui/initialize', {
    appInfo: { name: 'builtin-' + O.kind, version: '1.0.0' },
    appCapabilities: {},
    protocolVersion: '2026-01-26'
  }).then(function (init) {
    bridged = true;
    context(init && init.hostContext);
    send({ jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} });
    sent = 0;
    size();
  }, function () {});
  if (window.ResizeObserver) new ResizeObserver(size).observe(document.body);
})();
