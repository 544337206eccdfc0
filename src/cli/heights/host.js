// The page `check` measures widgets in: an MCP Apps host for one inline
// frame per widget, each holding the widget's resource as the gateway
// serves it (srcdoc, sandbox="allow-scripts", the widget's policy in a meta
// element first in its head). It answers ui/initialize with an inline,
// light, 720 px wide host context, sends the sample's tool input and result
// once the widget says it is initialized, sizes the frame by every
// ui/notifications/size-changed, as hosts do, and records the largest height
// reported from the result on. When every widget has been quiet for a
// moment after its result (or the page's time is up), it replaces its body
// with one line per widget, which the browser's dump of the DOM carries
// back: `<index> px <height>`, or for one that reported no height what it
// did not do: `<index> no-initialize` (it never sent ui/initialize),
// `<index> no-initialized` (nor ui/notifications/initialized after the
// answer, so no host sends it its data) or `<index> no-size` (no
// ui/notifications/size-changed after its result). Nothing is called:
// tools/call and resources/read from a widget are answered with an error.
(function () {
  'use strict';

  var APPS_PROTOCOL_VERSION = '2026-01-26';
  var HOST_INFO = { name: 'mcp-ui-gateway-check', version: '1.0.0' };
  var jobs = JSON.parse(document.getElementById('jobs').textContent);
  var config = JSON.parse(document.getElementById('config').textContent);
  var views = [];

  function hostContext(view) {
    return {
      theme: 'light',
      displayMode: 'inline',
      availableDisplayModes: ['inline'],
      locale: 'en-US',
      timeZone: 'UTC',
      userAgent: navigator.userAgent,
      platform: 'web',
      deviceCapabilities: { touch: false, hover: true },
      safeAreaInsets: { top: 0, right: 0, bottom: 0, left: 0 },
      containerDimensions: { width: config.width, maxHeight: config.maxHeight },
      toolInfo: { tool: view.job.tool },
    };
  }

  // The widget document with its policy first in its head, as the
  // Content-Security-Policy header of a host's sandbox would apply it.
  function withPolicy(html, policy) {
    var meta = '<meta http-equiv="Content-Security-Policy" content="' +
      policy.replace(/&/g, '&amp;').replace(/"/g, '&quot;') + '">';
    var head = /<head\b[^>]*>/i.exec(html);
    if (head) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length);
    var root = /<html\b[^>]*>/i.exec(html);
    if (root) {
      var at = root.index + root[0].length;
      return html.slice(0, at) + '<head>' + meta + '</head>' + html.slice(at);
    }
    var doctype = /^\s*<!doctype[^>]*>/i.exec(html);
    if (doctype) return doctype[0] + '<head>' + meta + '</head>' + html.slice(doctype[0].length);
    return meta + html;
  }

  function post(view, message) {
    if (view.frame.contentWindow) view.frame.contentWindow.postMessage(message, '*');
  }

  function answer(view, method) {
    switch (method) {
      case 'ui/initialize':
        if (view.resultAt === null) view.state = 'no-initialized';
        return {
          protocolVersion: APPS_PROTOCOL_VERSION,
          hostInfo: HOST_INFO,
          hostCapabilities: { openLinks: {}, logging: {}, sandbox: { csp: view.job.csp } },
          hostContext: hostContext(view),
        };
      case 'ping':
      case 'ui/open-link':
      case 'ui/message':
      case 'ui/update-model-context':
        return {};
      case 'ui/request-display-mode':
        return { mode: 'inline' };
      default:
        // tools/call, resources/read and the rest: nothing is called while measuring.
        return undefined;
    }
  }

  function onRequest(view, msg) {
    var result = answer(view, msg.method);
    if (result === undefined) {
      post(view, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'not available while check measures the widget: ' + msg.method } });
    } else {
      post(view, { jsonrpc: '2.0', id: msg.id, result: result });
    }
  }

  function onNotification(view, method, params) {
    if (method === 'ui/notifications/initialized') {
      if (view.resultAt !== null) return;
      post(view, { jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: view.job.arguments } });
      post(view, { jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: view.job.result });
      view.resultAt = Date.now();
      view.changedAt = view.resultAt;
      view.state = 'no-size';
      if (view.height > 0) view.largest = view.height;
    } else if (method === 'ui/notifications/size-changed') {
      var height = Number(params.height);
      if (!(height > 0) || !isFinite(height)) return;
      view.height = Math.ceil(height);
      view.frame.style.height = Math.min(view.height, config.frameLimit) + 'px';
      if (view.resultAt !== null) {
        view.largest = Math.max(view.largest, view.height);
        view.changedAt = Date.now();
      }
    }
  }

  window.addEventListener('message', function (event) {
    var msg = event.data;
    if (!msg || typeof msg !== 'object' || msg.jsonrpc !== '2.0' || typeof msg.method !== 'string') return;
    for (var i = 0; i < views.length; i++) {
      var view = views[i];
      if (event.source !== view.frame.contentWindow) continue;
      if (msg.id !== undefined && msg.id !== null) onRequest(view, msg);
      else onNotification(view, msg.method, msg.params || {});
      return;
    }
  });

  function settled(view, now) {
    return view.largest > 0 && now - view.changedAt >= config.quietMs;
  }

  function finish() {
    var lines = views.map(function (view, i) {
      return view.largest > 0 ? i + ' px ' + view.largest : i + ' ' + view.state;
    });
    document.body.textContent = '';
    var out = document.createElement('pre');
    out.id = 'heights';
    out.textContent = lines.join('\n');
    document.body.appendChild(out);
  }

  var started = Date.now();
  function watch() {
    var now = Date.now();
    var done = views.every(function (view) { return settled(view, now); });
    if (done || now - started >= config.limitMs) finish();
    else setTimeout(watch, 50);
  }

  jobs.forEach(function (job) {
    var frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts');
    frame.setAttribute('title', job.tool.name);
    frame.style.width = config.width + 'px';
    frame.style.height = config.frameHeight + 'px';
    views.push({ job: job, frame: frame, state: 'no-initialize', resultAt: null, changedAt: 0, height: 0, largest: 0 });
    frame.srcdoc = withPolicy(job.html, job.policy);
    document.body.appendChild(frame);
  });
  setTimeout(watch, 50);
})();
