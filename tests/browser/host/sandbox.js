// Sandbox proxy of the test host (the outer iframe, on an origin other than the
// host's). The test server sends this page with a Content-Security-Policy header
// built from the resource's _meta.ui.csp; the inner iframe, written from here,
// inherits that policy.
//
//   host --postMessage--> this page --postMessage--> inner iframe (the View)
//   host <--postMessage-- this page <--postMessage-- inner iframe
//
// It announces itself with ui/notifications/sandbox-proxy-ready, receives the
// View's HTML in ui/notifications/sandbox-resource-ready, and from then on relays
// every message except its own ui/notifications/sandbox-* ones. It never creates
// requests of its own.
(function () {
  'use strict';
  var PREFIX = 'ui/notifications/sandbox-';
  var DEFAULT_SANDBOX = 'allow-scripts allow-same-origin allow-forms';
  var inner = null;
  var early = []; // messages from the host that arrive before the View exists

  if (window.parent === window) {
    document.body.textContent = 'This page only works inside the test host.';
    return;
  }

  function toHost(message) {
    window.parent.postMessage(message, '*');
  }

  // _meta.ui.permissions -> the iframe's allow attribute.
  function allowAttribute(permissions) {
    if (!permissions || typeof permissions !== 'object') return '';
    var names = [];
    if (permissions.camera) names.push('camera');
    if (permissions.microphone) names.push('microphone');
    if (permissions.geolocation) names.push('geolocation');
    if (permissions.clipboardWrite) names.push('clipboard-write');
    return names.join('; ');
  }

  function mount(params) {
    if (inner) return; // one View per sandbox
    inner = document.createElement('iframe');
    inner.id = 'view';
    inner.title = 'MCP App view';
    inner.setAttribute('sandbox', typeof params.sandbox === 'string' ? params.sandbox : DEFAULT_SANDBOX);
    var allow = allowAttribute(params.permissions);
    if (allow) inner.setAttribute('allow', allow);
    document.body.appendChild(inner);
    var doc = inner.contentWindow.document;
    doc.open();
    doc.write(String(params.html || ''));
    doc.close();
    early.splice(0).forEach(function (m) { inner.contentWindow.postMessage(m, '*'); });
  }

  window.addEventListener('message', function (event) {
    var data = event.data;
    if (event.source === window.parent) {
      var method = data && typeof data.method === 'string' ? data.method : '';
      if (method === PREFIX + 'resource-ready') {
        mount(data.params || {});
      } else if (method.indexOf(PREFIX) === 0) {
        // other sandbox-internal notifications: not for the View
      } else if (inner) {
        inner.contentWindow.postMessage(data, '*');
      } else {
        early.push(data);
      }
    } else if (inner && event.source === inner.contentWindow) {
      toHost(data);
    }
  });

  toHost({ jsonrpc: '2.0', method: PREFIX + 'proxy-ready', params: {} });
})();
