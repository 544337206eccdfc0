// Clock: renders mcp-server-time's results through the MCP Apps bridge
// (JSON-RPC 2.0 over window.parent.postMessage), and reads the clock again with
// a tools/call from the view. Uses window.openai instead when ChatGPT provides it.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var nextId = 1;
  var waiting = {};
  var zone = null;

  function send(message) { window.parent.postMessage(message, '*'); }
  function request(method, params) {
    var id = 'clock-' + nextId++;
    send({ jsonrpc: '2.0', id: id, method: method, params: params });
    return new Promise(function (resolve, reject) { waiting[id] = { resolve: resolve, reject: reject }; });
  }

  // A get_current_time result is {timezone, datetime, …}; convert_time's is
  // {source: {…}, target: {…}, time_difference}.
  function render(result) {
    var data = result && result.structuredContent;
    if (!data && result && result.content && result.content[0] && result.content[0].type === 'text') {
      try { data = JSON.parse(result.content[0].text); } catch (e) { data = null; }
    }
    if (!data) { $('status').textContent = 'The tool returned no time.'; return; }
    var shown = data.target || data;
    zone = shown.timezone || zone;
    $('zone').textContent = shown.timezone || '';
    $('time').textContent = String(shown.datetime || '').replace(/^.*T(\d\d:\d\d:\d\d).*$/, '$1');
    $('detail').textContent = data.source
      ? 'from ' + data.source.datetime + ' in ' + data.source.timezone + ' (' + data.time_difference + ')'
      : (shown.day_of_week || '') + (shown.is_dst ? ', daylight saving time' : '');
    $('refresh').disabled = !zone;
  }

  function refresh() {
    $('status').textContent = 'Reading the clock…';
    var args = { timezone: zone };
    var call = window.openai && window.openai.callTool
      ? window.openai.callTool('get_current_time', args)
      : request('tools/call', { name: 'get_current_time', arguments: args });
    call.then(function (result) { render(result); $('status').textContent = 'Updated.'; },
              function (e) { $('status').textContent = 'Failed: ' + (e && e.message || e); });
  }

  window.addEventListener('message', function (event) {
    var m = event.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.id !== undefined && waiting[m.id] && !m.method) {
      var w = waiting[m.id]; delete waiting[m.id];
      if (m.error) w.reject(new Error(m.error.message)); else w.resolve(m.result);
      return;
    }
    if (m.method === 'ui/notifications/tool-result') render(m.params);
    else if (m.method === 'ui/notifications/host-context-changed' && m.params && m.params.theme) {
      document.documentElement.setAttribute('data-theme', m.params.theme);
    } else if (m.id !== undefined && m.method) {
      // Every request of the host is answered.
      send(m.method === 'ping' || m.method === 'ui/resource-teardown'
        ? { jsonrpc: '2.0', id: m.id, result: {} }
        : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found: ' + m.method } });
    }
  });

  $('refresh').addEventListener('click', refresh);

  if (window.openai && window.openai.toolOutput) render({ structuredContent: window.openai.toolOutput });
  request('ui/initialize', {
    appInfo: { name: 'clock', version: '0.1.0' },
    appCapabilities: {},
    protocolVersion: '2026-01-26'
  }).then(function (init) {
    var theme = init && init.hostContext && init.hostContext.theme;
    if (theme) document.documentElement.setAttribute('data-theme', theme);
    send({ jsonrpc: '2.0', method: 'ui/notifications/initialized' });
    // The content's own height, on every change (the document's scroll
    // height never falls below the frame's: it would grow but not shrink).
    new ResizeObserver(function () {
      send({ jsonrpc: '2.0', method: 'ui/notifications/size-changed',
             params: { height: Math.ceil(document.documentElement.getBoundingClientRect().height) } });
    }).observe(document.body);
  }, function (e) { $('status').textContent = 'No host bridge: ' + e.message; });
})();
