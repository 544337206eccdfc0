// The /preview page: an MCP Apps host for the gateway's own mounts.
//
// It speaks MCP streamable HTTP to a mount (initialize, notifications/initialized,
// tools/list, tools/call, resources/read, with Mcp-Session-Id), keeps a GET SSE
// stream on its session for list_changed notifications, and renders a tool's
// widget in a sandboxed iframe (no allow-same-origin) whose document the page
// writes from what resources/read returned. The iframe's Content-Security-Policy
// comes from the resource's _meta.ui.csp (the gateway builds the header of
// /preview/sandbox from it). The widget talks to the page over the MCP Apps
// ui/* bridge (JSON-RPC over postMessage); a window.openai object is injected
// for widgets written against ChatGPT.
//
// A mount that asks for tokens ([auth]; /preview/mounts.json says so, or a
// 401 does) gets a sign-in panel. With the gateway's own authorization server
// the page signs in as hosts do, as an OAuth 2.1 public client: its metadata
// read, a client registered once per origin and issuer (RFC 7591,
// token_endpoint_auth_method none, the redirect URI /preview/callback on the
// page's own origin; the client id kept in localStorage), the authorization
// code flow with PKCE S256, state and resource (RFC 8707), the answer's state
// and iss (RFC 9207) checked, the code redeemed at the token endpoint. The
// tokens are kept in sessionStorage (this tab only), per resource, and sent
// as Authorization: Bearer on every MCP request (POST, the GET stream,
// DELETE), the widget's calls included; a 401 is met once with the refresh
// token. Otherwise an access token is pasted in. A render tool
// (_meta["io.github.mcp-ui-gateway/renderTool"]) gets a button filling its
// form with its data tool's result.
(function () {
  'use strict';

  var MCP_PROTOCOL_VERSION = '2025-06-18';
  var APPS_PROTOCOL_VERSION = '2026-01-26';
  var HOST_INFO = { name: 'mcp-ui-gateway-preview', version: '1.0.0' };
  var DISPLAY_MODES = ['inline', 'fullscreen', 'pip'];
  var REQUEST_TIMEOUT_MS = 120000;
  // Every request of a sign-in (metadata, registration, token, revocation).
  var AUTH_TIMEOUT_MS = 15000;
  // Where the authorization server sends the browser back (served as this page).
  var CALLBACK_PATH = '/preview/callback';
  // Keys of what the page keeps in the browser's storage.
  var STORE = 'mcp-ui-gateway.preview.';
  var PENDING_KEY = STORE + 'sign-in';
  // How long a sign-in may take, from the click to the answer.
  var SIGN_IN_LIMIT_MS = 15 * 60 * 1000;
  // The tool _meta key naming a render tool's data tools.
  var RENDER_META = 'io.github.mcp-ui-gateway/renderTool';

  var $ = function (id) { return document.getElementById(id); };
  var ui = {
    mount: $('mount'), server: $('server'), origins: $('origins'), theme: $('theme'), displayMode: $('display-mode'),
    locale: $('locale'), connection: $('connection'), toolList: $('tool-list'),
    toolsEmpty: $('tools-empty'), toolName: $('tool-name'), toolDescription: $('tool-description'),
    form: $('tool-form'), fields: $('fields'), formError: $('form-error'), callButton: $('call-button'),
    rawRequest: $('raw-request'), requestOrigin: $('request-origin'), rawResult: $('raw-result'),
    resultState: $('result-state'), requestNote: $('request-note'), resultNote: $('result-note'), widgetHost: $('widget-host'), widgetUri: $('widget-uri'),
    widgetEmpty: $('widget-empty'), exitMode: $('exit-mode'), sidePanel: $('side-panel'),
    bridgeLog: $('bridge-log'), clearLog: $('clear-log'),
    account: $('account'), accountName: $('account-name'), signOut: $('sign-out'),
    authPanel: $('auth-panel'), authTitle: $('auth-title'), authMessage: $('auth-message'), authError: $('auth-error'),
    authSignIn: $('auth-sign-in'), signIn: $('sign-in'), signInNote: $('sign-in-note'),
    tokenDetails: $('token-details'), tokenForm: $('token-form'), tokenInput: $('token-input'), tokenHint: $('token-hint'),
    fillFrom: $('fill-from'), fillNote: $('fill-note'),
    previewHost: $('preview-host'), hostNote: $('host-note'), hostsTable: $('hosts-table'),
  };

  var state = {
    mounts: [],
    mount: null,
    // The gateway's own authorization server (mounts.json), if any.
    authorizationServer: null,
    // The last result of each tool called, by name (for "Use data from").
    results: {},
    mcp: null,
    tools: [],
    tool: null,
    lastCall: null, // { tool, arguments, result }
    view: null,
    theme: 'light',
    displayMode: 'inline',
    locale: 'en-US',
    modelContext: null,
    // The host the widget is rendered as (HOSTS).
    host: 'apps',
  };
  // For tests and debugging.
  window.__preview = state;

  // ------------------------------------------------------------------ MCP over streamable HTTP

  // Splits an SSE byte stream into JSON-RPC messages (data of each event),
  // each given with its text. Each chunk is looked at once: line ends are
  // normalised as they arrive (a \r ending one chunk may pair with the \n
  // starting the next) and an event's end is searched for from where the
  // last search stopped, so a large event costs its length, not its square.
  function SseParser(onMessage) {
    var buffer = '';
    var scanned = 0;
    var cr = false;
    function dispatch(block) {
      var data = [];
      block.split('\n').forEach(function (line) {
        if (line.indexOf('data:') === 0) data.push(line.slice(5).replace(/^ /, ''));
      });
      if (!data.length) return;
      var text = data.join('\n');
      if (!text.trim()) return;
      var msg;
      try { msg = JSON.parse(text); } catch (e) { log('error', 'in', 'unparsable SSE event', text.slice(0, 300)); return; }
      onMessage(msg, text);
    }
    return function (chunk, done) {
      if (cr && chunk.charAt(0) === '\n') chunk = chunk.slice(1);
      cr = chunk.charAt(chunk.length - 1) === '\r';
      buffer += chunk.replace(/\r\n?/g, '\n');
      var start = 0;
      for (;;) {
        var end = buffer.indexOf('\n\n', Math.max(scanned, start));
        if (end < 0) break;
        dispatch(buffer.slice(start, end));
        start = end + 2;
      }
      buffer = buffer.slice(start);
      scanned = Math.max(0, buffer.length - 1);
      if (done) {
        if (buffer) dispatch(buffer);
        buffer = '';
        scanned = 0;
      }
    };
  }

  async function readSse(response, onMessage, signal) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var feed = SseParser(onMessage);
    try {
      for (;;) {
        if (signal && signal.aborted) break;
        var step = await reader.read();
        if (step.done) { feed(decoder.decode(), true); break; }
        feed(decoder.decode(step.value, { stream: true }), false);
      }
    } finally {
      try { reader.releaseLock(); } catch (e) { /* already released */ }
    }
  }

  // The text each answer arrived as, for the result panel.
  var received = new WeakMap();

  function Mcp(mount) {
    this.mount = mount;
    this.path = mount.path;
    this.sessionId = null;
    this.protocolVersion = MCP_PROTOCOL_VERSION;
    this.nextId = 1;
    this.closed = false;
    this.streamAbort = null;
    this.onNotification = function () {};
    this.onRecovered = function () {};
    this.onAuthRefused = function () {};
  }

  Mcp.prototype.headers = function (accept) {
    var h = { 'Accept': accept, 'Content-Type': 'application/json' };
    var token = savedToken(this.mount);
    if (token) h['Authorization'] = 'Bearer ' + token.access_token;
    if (this.sessionId) h['Mcp-Session-Id'] = this.sessionId;
    if (this.initialized) h['MCP-Protocol-Version'] = this.protocolVersion;
    return h;
  };

  // One JSON-RPC request; resolves to the whole response message. A 401
  // is met once with the refresh token, then thrown as an error with .auth.
  Mcp.prototype.request = async function (method, params, retried, refreshed) {
    var self = this;
    var id = this.nextId++;
    var message = { jsonrpc: '2.0', id: id, method: method, params: params || {} };
    var body = JSON.stringify(message);
    this.lastRequest = message;
    received.set(message, body);
    var abort = new AbortController();
    var timer = setTimeout(function () { abort.abort(); }, REQUEST_TIMEOUT_MS);
    try {
      var headers = this.headers('application/json, text/event-stream');
      var response = await fetch(this.path, {
        method: 'POST', headers: headers,
        body: body, signal: abort.signal,
      });
      if (response.status === 401) {
        var refused = authRefusal(response, await response.text(), headers);
        if (!refreshed && refused.auth.token && await refreshFor(this.mount, refused.auth.token)) {
          return this.request(method, params, retried, true);
        }
        throw refused;
      }
      if (method === 'initialize') {
        var sid = response.headers.get('mcp-session-id');
        if (sid) this.sessionId = sid;
      }
      if (response.status === 404 && this.sessionId && method !== 'initialize' && !retried) {
        // The session ended (gateway restart, idle timeout): start a new one.
        await this.connect();
        return this.request(method, params, true);
      }
      var type = (response.headers.get('content-type') || '').toLowerCase();
      var answer = null;
      var answerText = '';
      if (type.indexOf('text/event-stream') === 0) {
        await readSse(response, function (msg, text) {
          if (msg && msg.id === id && msg.method === undefined) { answer = msg; answerText = text; }
          else if (msg && msg.method) self.onNotification(msg);
        }, abort.signal);
      } else {
        answerText = await response.text();
        try { answer = answerText ? JSON.parse(answerText) : null; } catch (e) { answer = null; }
        if (!answer || typeof answer !== 'object') {
          throw new Error(method + ': HTTP ' + response.status + ' ' + answerText.slice(0, 300));
        }
      }
      if (!answer) throw new Error(method + ': HTTP ' + response.status + ', no response in the stream');
      received.set(answer, answerText);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  };

  // The result, or an Error carrying the JSON-RPC error.
  Mcp.prototype.call = async function (method, params) {
    var msg = await this.request(method, params);
    if (msg.error) {
      var err = new Error(method + ': ' + (msg.error.message || 'error ' + msg.error.code));
      err.rpc = msg.error;
      throw err;
    }
    return msg.result;
  };

  Mcp.prototype.notify = async function (method, params) {
    var headers = this.headers('application/json, text/event-stream');
    var response = await fetch(this.path, {
      method: 'POST', headers: headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: method, params: params || {} }),
    });
    if (response.status === 401) throw authRefusal(response, await response.text(), headers);
    if (!response.ok) throw new Error(method + ': HTTP ' + response.status);
  };

  Mcp.prototype.connect = async function () {
    this.initialized = false;
    this.sessionId = null;
    var result = await this.call('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: HOST_INFO,
    });
    this.serverInfo = result.serverInfo || {};
    this.capabilities = result.capabilities || {};
    if (typeof result.protocolVersion === 'string') this.protocolVersion = result.protocolVersion;
    this.initialized = true;
    await this.notify('notifications/initialized');
    this.listen();
    return result;
  };

  // The GET stream of the session: server-initiated notifications (list_changed
  // when overlays are reloaded). Reopened after it ends, with a bounded backoff.
  Mcp.prototype.listen = function () {
    var self = this;
    if (this.streamAbort) this.streamAbort.abort();
    var abort = new AbortController();
    this.streamAbort = abort;
    var delay = 500;
    var refreshed = false;
    (async function loop() {
      while (!self.closed && !abort.signal.aborted) {
        try {
          var headers = self.headers('text/event-stream');
          var response = await fetch(self.path, {
            method: 'GET', headers: headers, signal: abort.signal,
          });
          if (response.status === 401) {
            var refused = authRefusal(response, await response.text(), headers);
            if (!refreshed && refused.auth.token && await refreshFor(self.mount, refused.auth.token)) {
              refreshed = true;
              continue;
            }
            log('error', 'gateway', 'GET stream', refused.message);
            self.onAuthRefused(refused);
            return;
          }
          if (response.status === 405) { log('info', 'gateway', 'GET stream', 'not offered by this mount (405)'); return; }
          if (response.status === 404 && self.sessionId) { self.recover(); return; }
          if (response.ok && response.body) {
            delay = 500;
            refreshed = false;
            self.streaming = true;
            setConnection('connected', 'connected · listening');
            await readSse(response, function (msg) { if (msg && msg.method) self.onNotification(msg); }, abort.signal);
          }
        } catch (e) {
          if (abort.signal.aborted) return;
        }
        self.streaming = false;
        if (self.closed || abort.signal.aborted) return;
        setConnection('connecting', 'stream ended: reconnecting…');
        await new Promise(function (r) { setTimeout(r, delay); });
        delay = Math.min(delay * 2, 10000);
      }
    })();
  };

  // The session is gone (the gateway restarted, or it expired): start a new
  // one, a bounded number of times, then list again.
  Mcp.prototype.recover = async function () {
    if (this.recovering || this.closed) return;
    this.recovering = true;
    setConnection('connecting', 'session ended: reconnecting…');
    for (var attempt = 1; attempt <= 60 && !this.closed; attempt++) {
      try {
        await this.connect();
        this.recovering = false;
        this.onRecovered();
        return;
      } catch (e) {
        if (e.auth) {
          this.recovering = false;
          this.onAuthRefused(e);
          return;
        }
        await new Promise(function (r) { setTimeout(r, Math.min(1000 * attempt, 10000)); });
      }
    }
    this.recovering = false;
    if (!this.closed) setConnection('error', 'cannot reconnect: reload the page');
  };

  Mcp.prototype.close = function () {
    this.closed = true;
    if (this.streamAbort) this.streamAbort.abort();
    if (this.sessionId) {
      fetch(this.path, { method: 'DELETE', keepalive: true, headers: this.headers('application/json, text/event-stream') })
        .catch(function () {});
    }
  };

  // ------------------------------------------------------------------ tokens and signing in

  // The browser's storage ('sessionStorage' or 'localStorage'), which may be
  // refused (a policy, a sandbox: even naming it throws): then nothing is
  // kept, and the page says so in its log.
  function stored(storage, key) {
    try { return window[storage].getItem(key); } catch (e) { return null; }
  }
  function store(storage, key, value) {
    try {
      if (value === null) window[storage].removeItem(key); else window[storage].setItem(key, value);
    } catch (e) {
      log('error', 'host', 'storage', 'the browser refused to keep ' + key + ': ' + e.message);
    }
  }

  // A mount's tokens are kept per resource (its URL as its metadata names
  // it), in sessionStorage: this tab only, gone when it closes.
  function tokenKey(mount) {
    var resource = mount && mount.auth && mount.auth.resource;
    return STORE + 'token ' + (resource || location.origin + (mount ? mount.path : ''));
  }

  function savedToken(mount) {
    if (!mount) return null;
    var t = null;
    try { t = JSON.parse(stored('sessionStorage', tokenKey(mount)) || 'null'); } catch (e) { t = null; }
    return t && typeof t.access_token === 'string' && t.access_token ? t : null;
  }

  function saveToken(mount, t) { store('sessionStorage', tokenKey(mount), JSON.stringify(t)); }
  function forgetToken(mount) { store('sessionStorage', tokenKey(mount), null); }

  // The parameters of a Bearer challenge (RFC 6750 §3), for what the page
  // shows: error, error_description, scope, resource_metadata.
  function parseChallenge(header) {
    var out = {};
    var at = /(^|,)\s*Bearer\b/i.exec(header || '');
    if (!at) return out;
    var rest = header.slice(at.index + at[0].length);
    var param = /^[\s,]*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))/;
    for (var m = param.exec(rest); m; m = param.exec(rest)) {
      var key = m[1].toLowerCase();
      if (!(key in out)) out[key] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
      // The next challenge (`, Basic realm=…`) matches no parameter: the end.
      rest = rest.slice(m[0].length);
    }
    return out;
  }

  // A 401 as an Error: its message the challenge's error_description (or the
  // JSON-RPC error's), and .auth what the page needs to ask for a token.
  function authRefusal(response, text, sentHeaders) {
    var challenge = parseChallenge(response.headers.get('www-authenticate'));
    var message = challenge.error_description;
    if (!message) {
      try { message = JSON.parse(text).error.message; } catch (e) { message = null; }
    }
    var sent = sentHeaders && sentHeaders.Authorization;
    var err = new Error(message || 'this endpoint needs a bearer token');
    err.auth = {
      status: response.status,
      challenge: challenge,
      token: sent ? sent.replace(/^Bearer /, '') : null,
    };
    return err;
  }

  function base64url(bytes) {
    var bin = '';
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  function randomString(bytes) {
    var b = new Uint8Array(bytes);
    crypto.getRandomValues(b);
    return base64url(b);
  }

  // The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
  async function s256(verifier) {
    var digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
    return base64url(new Uint8Array(digest));
  }

  // Who a token names: the `sub` of a JWT, read without verifying it (the
  // gateway verifies; this is only what the page shows), or null.
  function subjectOf(token) {
    var parts = String(token).split('.');
    if (parts.length !== 3) return null;
    try {
      var b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
      while (b64.length % 4) b64 += '=';
      var bin = atob(b64);
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var claims = JSON.parse(new TextDecoder().decode(bytes));
      return claims && typeof claims.sub === 'string' && claims.sub ? claims.sub : null;
    } catch (e) {
      return null;
    }
  }

  // An endpoint an authorization server names: an absolute http(s) URL.
  function endpointUrl(value, name) {
    var url;
    try { url = new URL(String(value)); } catch (e) { url = null; }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      throw new Error('the authorization server\'s ' + name + ' is not an http(s) URL: ' + JSON.stringify(value));
    }
    return url;
  }

  // One request of a sign-in, bounded: the JSON answer, or an Error saying
  // what the server said (error_description) or why there was no answer.
  async function authFetch(url, init, what) {
    var abort = new AbortController();
    var timer = setTimeout(function () { abort.abort(); }, AUTH_TIMEOUT_MS);
    var response;
    var text;
    try {
      init.signal = abort.signal;
      init.credentials = 'omit';
      response = await fetch(url, init);
      text = await response.text();
    } catch (e) {
      throw new Error(what + ': ' + (abort.signal.aborted ? 'no answer within ' + AUTH_TIMEOUT_MS / 1000 + ' s' : e.message)
        + ' (' + url + ')');
    } finally {
      clearTimeout(timer);
    }
    var body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!response.ok) {
      var why = body && (body.error_description || body.error) || ('HTTP ' + response.status + ' ' + text.slice(0, 200));
      var err = new Error(what + ': ' + why);
      err.status = response.status;
      err.oauth = body && body.error;
      throw err;
    }
    return body;
  }

  // A form POST to a token or revocation endpoint.
  function formPost(url, fields, what) {
    return authFetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Accept': 'application/json' },
      body: new URLSearchParams(fields).toString(),
    }, what);
  }

  // A token endpoint's answer, checked, as the page keeps it.
  function tokensOf(answer, kept) {
    if (!answer || typeof answer.access_token !== 'string' || !answer.access_token) {
      throw new Error('the token endpoint answered no access_token');
    }
    if (typeof answer.token_type !== 'string' || answer.token_type.toLowerCase() !== 'bearer') {
      throw new Error('the token endpoint answered a token of type ' + JSON.stringify(answer.token_type) + ', not Bearer');
    }
    var t = {};
    Object.keys(kept).forEach(function (k) { t[k] = kept[k]; });
    t.access_token = answer.access_token;
    if (typeof answer.refresh_token === 'string') t.refresh_token = answer.refresh_token;
    if (typeof answer.scope === 'string') t.scope = answer.scope;
    if (typeof answer.expires_in === 'number') t.expires_at = Date.now() + answer.expires_in * 1000;
    return t;
  }

  // One refresh at a time per token: requests refused together share it (a
  // refresh token is good once; a second use would end the sign-in).
  var refreshing = {};

  // After a 401 of `refusedToken`: true when a new access token may be
  // tried (refreshed now, or already since that request was sent).
  function refreshFor(mount, refusedToken) {
    var current = savedToken(mount);
    if (!current) return Promise.resolve(false);
    if (current.access_token !== refusedToken) return Promise.resolve(true);
    if (!current.refresh_token || !current.token_endpoint || !current.client_id) return Promise.resolve(false);
    var key = tokenKey(mount);
    if (!refreshing[key]) {
      refreshing[key] = (async function () {
        try {
          var answer = await formPost(current.token_endpoint, {
            grant_type: 'refresh_token', refresh_token: current.refresh_token, client_id: current.client_id,
          }, 'refresh');
          saveToken(mount, tokensOf(answer, current));
          log('info', 'host', 'sign-in', 'the access token was refused (' + mount.path + '): refreshed');
          return true;
        } catch (e) {
          log('error', 'host', 'sign-in', e.message);
          return false;
        } finally {
          delete refreshing[key];
        }
      })();
    }
    return refreshing[key];
  }

  // The client this page is at the authorization server: one registered
  // before (kept in localStorage per origin, issuer and redirect URI), if the
  // server still knows it, else one registered now (RFC 7591), public.
  async function clientFor(meta, redirectUri, server) {
    var key = STORE + 'client ' + meta.issuer + ' ' + redirectUri;
    var kept = stored('localStorage', key);
    var tokenEndpoint = endpointUrl(meta.token_endpoint, 'token_endpoint').href;
    if (kept) {
      // A client the server forgot (its session_key changed, or it went
      // unused) would stop the user at the authorization endpoint's error
      // page: ask the token endpoint first, which authenticates the client
      // before anything else (no code: invalid_request for a known client).
      try {
        await formPost(tokenEndpoint, { grant_type: 'authorization_code', client_id: kept }, 'client check');
      } catch (e) {
        if (e.status === 401 || e.oauth === 'invalid_client') {
          log('info', 'host', 'sign-in', 'the client registered before is unknown now: registering again');
          store('localStorage', key, null);
          kept = null;
        } else if (e.status === undefined || e.status >= 500 || e.status === 429) {
          throw e;
        }
      }
      if (kept) return kept;
    }
    if (!meta.registration_endpoint) {
      throw new Error('the authorization server offers no registration (registration.enabled = false under '
        + '[authorization_server]): paste an access token below instead');
    }
    var registration = endpointUrl(meta.registration_endpoint, 'registration_endpoint').href;
    var answer;
    try {
      answer = await authFetch(registration, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' },
        body: JSON.stringify({
          client_name: 'mcp-ui-gateway preview',
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        }),
      }, 'registration');
    } catch (e) {
      if (e.oauth === 'invalid_redirect_uri') {
        e.message += '. This page\'s address cannot be a redirect URI: open it at '
          + new URL('/preview', server.issuer).href + ' (or over https)';
      }
      throw e;
    }
    if (!answer || typeof answer.client_id !== 'string' || !answer.client_id) {
      throw new Error('registration: the answer names no client_id');
    }
    store('localStorage', key, answer.client_id);
    log('info', 'host', 'sign-in', 'registered as client ' + answer.client_id.slice(0, 12) + '…');
    return answer.client_id;
  }

  // Sends the browser to the gateway's authorization server to sign in for
  // `mount`; it comes back to CALLBACK_PATH (finishSignIn).
  async function signIn(mount) {
    var server = state.authorizationServer;
    showAuthError(null);
    ui.signIn.disabled = true;
    ui.signInNote.textContent = 'Reading the authorization server\'s metadata…';
    try {
      if (!server) throw new Error('this gateway has no [authorization_server]');
      if (!window.isSecureContext || !window.crypto || !crypto.subtle) {
        throw new Error('signing in needs a secure page (PKCE uses the browser\'s crypto.subtle): open '
          + new URL('/preview', server.issuer).href + ', or the page over https');
      }
      var meta = await authFetch(server.metadata, { method: 'GET', headers: { 'Accept': 'application/json' } }, 'metadata');
      if (!meta || meta.issuer !== server.issuer) {
        throw new Error('the metadata at ' + server.metadata + ' names the issuer ' + JSON.stringify(meta && meta.issuer)
          + ', not ' + server.issuer);
      }
      if ((meta.code_challenge_methods_supported || []).indexOf('S256') < 0) {
        throw new Error('the authorization server does not offer PKCE with S256');
      }
      var authorize = endpointUrl(meta.authorization_endpoint, 'authorization_endpoint');
      var tokenEndpoint = endpointUrl(meta.token_endpoint, 'token_endpoint').href;
      var revocation = meta.revocation_endpoint ? endpointUrl(meta.revocation_endpoint, 'revocation_endpoint').href : null;
      var redirectUri = new URL(CALLBACK_PATH, location.origin).href;
      ui.signInNote.textContent = 'Registering this page as a client…';
      var clientId = await clientFor(meta, redirectUri, server);
      var verifier = randomString(32);
      var st = randomString(16);
      var resource = mount.auth.resource;
      store('sessionStorage', PENDING_KEY, JSON.stringify({
        state: st, verifier: verifier, redirect_uri: redirectUri, client_id: clientId, issuer: meta.issuer,
        iss_required: meta.authorization_response_iss_parameter_supported === true,
        token_endpoint: tokenEndpoint, revocation_endpoint: revocation,
        resource: resource, mount: mount.path, started: Date.now(),
      }));
      if (!stored('sessionStorage', PENDING_KEY)) throw new Error('the browser keeps nothing in sessionStorage for this page');
      var url = new URL(authorize.href);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('client_id', clientId);
      url.searchParams.set('redirect_uri', redirectUri);
      url.searchParams.set('state', st);
      url.searchParams.set('code_challenge', await s256(verifier));
      url.searchParams.set('code_challenge_method', 'S256');
      url.searchParams.set('resource', resource);
      if (mount.auth.scopes && mount.auth.scopes.length) url.searchParams.set('scope', mount.auth.scopes.join(' '));
      ui.signInNote.textContent = 'Going to ' + authorize.origin + ' to sign in…';
      log('info', 'host', 'sign-in', 'to ' + authorize.href);
      location.assign(url.href);
    } catch (e) {
      ui.signInNote.textContent = '';
      showAuthError('Cannot sign in: ' + e.message);
      ui.signIn.disabled = false;
    }
  }

  // Back from the authorization server at CALLBACK_PATH: the answer checked
  // against the sign-in this tab started (state, iss), the address bar
  // cleaned, the code redeemed. Null when this is no callback; else the
  // mount signed in for, and the error, if any.
  async function finishSignIn() {
    if (location.pathname !== CALLBACK_PATH) return null;
    var params = new URLSearchParams(location.search);
    history.replaceState(null, '', '/preview/');
    var pending = null;
    try { pending = JSON.parse(stored('sessionStorage', PENDING_KEY) || 'null'); } catch (e) { pending = null; }
    store('sessionStorage', PENDING_KEY, null);
    var mount = pending ? state.mounts.filter(function (m) { return m.path === pending.mount; })[0] || null : null;
    try {
      if (!pending || typeof pending.state !== 'string') {
        throw new Error('this tab started no sign-in (or it was finished already): sign in again');
      }
      if (params.get('state') !== pending.state) {
        throw new Error('the answer does not carry the state this page sent: it answers another sign-in');
      }
      var iss = params.get('iss');
      if (iss !== null ? iss !== pending.issuer : pending.iss_required) {
        throw new Error('the answer is from ' + (iss === null ? 'an unnamed issuer' : iss) + ', not ' + pending.issuer + ' (RFC 9207)');
      }
      if (params.get('error')) {
        throw new Error(params.get('error') + (params.get('error_description') ? ': ' + params.get('error_description') : ''));
      }
      if (Date.now() - pending.started > SIGN_IN_LIMIT_MS) throw new Error('it took longer than 15 minutes: sign in again');
      var code = params.get('code');
      if (!code) throw new Error('the answer carries no code');
      if (!mount || !mount.auth || mount.auth.resource !== pending.resource) {
        throw new Error('the endpoint ' + pending.mount + ' is not served as it was (the configuration changed?)');
      }
      var answer = await formPost(pending.token_endpoint, {
        grant_type: 'authorization_code', code: code, redirect_uri: pending.redirect_uri,
        code_verifier: pending.verifier, client_id: pending.client_id, resource: pending.resource,
      }, 'token');
      saveToken(mount, tokensOf(answer, {
        how: 'sign-in', issuer: pending.issuer, client_id: pending.client_id,
        token_endpoint: pending.token_endpoint, revocation_endpoint: pending.revocation_endpoint,
      }));
      log('info', 'host', 'sign-in', 'signed in for ' + pending.resource);
      return { mount: mount, error: null };
    } catch (e) {
      return { mount: mount, error: 'Sign-in failed: ' + e.message };
    }
  }

  // Forgets the mount's tokens (the refresh token revoked where the server
  // offers it), ends its session and connects again, signed out.
  async function signOut() {
    var mount = state.mount;
    if (!mount) return;
    var t = savedToken(mount);
    if (state.mcp) { state.mcp.close(); state.mcp = null; }
    forgetToken(mount);
    // What the signed-in user's calls showed goes too.
    ui.rawRequest.textContent = '—';
    ui.rawResult.textContent = '—';
    ui.requestOrigin.textContent = '';
    ui.resultState.textContent = '';
    ui.requestNote.hidden = true;
    ui.resultNote.hidden = true;
    state.results = {};
    if (t && t.how === 'sign-in' && t.refresh_token && t.revocation_endpoint && t.client_id) {
      try {
        await formPost(t.revocation_endpoint, {
          token: t.refresh_token, token_type_hint: 'refresh_token', client_id: t.client_id,
        }, 'revocation');
        log('info', 'host', 'sign-out', 'the refresh token was revoked');
      } catch (e) {
        log('error', 'host', 'sign-out', e.message);
      }
    }
    await connect(mount, { notice: 'Signed out.' });
  }

  // The header's account: who is signed in at this mount, if anyone.
  function renderAccount(mount) {
    var t = savedToken(mount);
    ui.account.hidden = !t;
    if (!t) return;
    var who = subjectOf(t.access_token);
    ui.accountName.textContent = '';
    ui.accountName.appendChild(document.createTextNode(t.how === 'pasted' ? 'token: ' : 'signed in as '));
    ui.accountName.appendChild(el('strong', { text: who || (t.how === 'pasted' ? 'pasted' : 'signed in') }));
    ui.accountName.title = (who ? 'sub ' + who + ' · ' : '') + (t.how === 'pasted' ? 'a pasted access token' : 'signed in at ' + t.issuer)
      + (t.scope ? ' · scope ' + t.scope : '');
  }

  function showAuthError(text) {
    ui.authError.textContent = text || '';
    ui.authError.hidden = !text;
  }

  function code(text) { return el('code', { text: text }); }

  function sentence(parts) {
    var p = document.createDocumentFragment();
    parts.forEach(function (x) { p.appendChild(typeof x === 'string' ? document.createTextNode(x) : x); });
    return p;
  }

  // The sign-in panel for `mount`: how this page gets a token for it, and
  // `error` (why it has none that works), if any. `refused` is the 401 that
  // asked for one, when the page learnt it so (an upstream's own OAuth).
  function showSignIn(mount, error, refused) {
    var auth = mount.auth;
    var server = state.authorizationServer;
    var ours = !!(auth && auth.sign_in === 'authorization_server' && server);
    ui.authPanel.hidden = false;
    ui.authTitle.textContent = 'Sign in to ' + mount.path;
    ui.authMessage.textContent = '';
    ui.tokenHint.textContent = '';
    var scopes = auth && auth.scopes && auth.scopes.length ? auth.scopes.join(' ') : null;
    // anonymous = true: callers without a token list, and call the tools marked so.
    var needs = auth && auth.anonymous
      ? 'Without a token this endpoint lists its tools and calls those marked "no sign-in" or "sign-in optional"; the others need a bearer token.'
      : 'This endpoint needs a bearer token.';
    if (ours) {
      ui.authMessage.appendChild(sentence([
        needs + ' Sign in with the gateway\'s authorization server (', code(server.issuer),
        '), as ChatGPT and Claude do: this page registers as a client, you allow it and sign in at the identity provider, and come back here',
        scopes ? '; it asks for ' : '.', scopes ? code(scopes) : null, scopes ? '.' : null,
      ].filter(Boolean)));
    } else if (auth) {
      ui.authMessage.appendChild(sentence([
        needs.replace(/\.$/, '') + ' from ', code(auth.issuer), ', for the resource ', code(auth.resource || mount.path),
        scopes ? ' with the scopes ' : '', scopes ? code(scopes) : '', '. Paste one below.',
      ].filter(function (x) { return x !== ''; })));
      ui.tokenHint.appendChild(sentence([
        'Get one from your provider, e.g. by the client credentials grant: ',
        code('curl -u CLIENT_ID:CLIENT_SECRET -d grant_type=client_credentials -d resource=' + (auth.resource || mount.path)
          + (scopes ? ' -d "scope=' + scopes + '"' : '') + ' TOKEN_ENDPOINT'),
        ' (the token endpoint of ', code(auth.issuer), '), or copy the one a signed-in client holds. It stays in this tab only.',
      ]));
    } else {
      var metadata = refused && refused.auth && refused.auth.challenge.resource_metadata;
      ui.authMessage.appendChild(sentence([
        'The server behind this endpoint asks for a bearer token of its own (OAuth passed through the gateway). Paste an access token its authorization server issued',
        metadata ? ' (named in ' : '', metadata ? code(metadata) : '', metadata ? ')' : '', '.',
      ].filter(function (x) { return x !== ''; })));
      ui.tokenHint.textContent = 'Get one from that authorization server (a signed-in client holds one), issued for '
        + location.origin + mount.path + '. It stays in this tab only.';
      if (metadata) describeResource(mount, metadata);
    }
    ui.authSignIn.hidden = !ours;
    ui.signIn.disabled = false;
    ui.signInNote.textContent = '';
    ui.tokenDetails.open = !ours;
    ui.tokenDetails.querySelector('summary').textContent = ours ? 'Or paste an access token' : 'Paste an access token';
    showAuthError(error || null);
  }

  // The protected-resource metadata a challenge named (the gateway's, for
  // the mount), read to say which authorization server issues the token and
  // for which resource; nothing is said when it cannot be read.
  async function describeResource(mount, metadata) {
    var doc;
    try {
      doc = await authFetch(metadata, { method: 'GET', headers: { 'Accept': 'application/json' } }, 'metadata');
    } catch (e) {
      log('error', 'host', 'sign-in', e.message);
      return;
    }
    if (state.mount !== mount || ui.authPanel.hidden || !doc || typeof doc.resource !== 'string') return;
    var servers = Array.isArray(doc.authorization_servers) ? doc.authorization_servers.filter(function (x) { return typeof x === 'string'; }) : [];
    ui.tokenHint.textContent = '';
    ui.tokenHint.appendChild(sentence([
      'Get one from ', servers.length ? code(servers.join(', ')) : 'its authorization server',
      ' (a signed-in client holds one), issued for the resource ', code(doc.resource),
      Array.isArray(doc.scopes_supported) && doc.scopes_supported.length ? ' with the scopes it needs (' : '',
      Array.isArray(doc.scopes_supported) && doc.scopes_supported.length ? code(doc.scopes_supported.join(' ')) : '',
      Array.isArray(doc.scopes_supported) && doc.scopes_supported.length ? ')' : '',
      '. It stays in this tab only.',
    ].filter(function (x) { return x !== ''; })));
  }

  function hideSignIn() {
    ui.authPanel.hidden = true;
    showAuthError(null);
  }

  // A request was refused for want of a token that works: a refused token is
  // forgotten, and the panel says why.
  function authRefused(mount, e) {
    if (state.mount !== mount) return;
    var had = e.auth && e.auth.token;
    if (had) forgetToken(mount);
    renderAccount(mount);
    var why = had ? 'The token was refused: ' + e.message : (e.auth && e.auth.challenge.error_description ? e.message : null);
    showSignIn(mount, why, e);
    setConnection('signed-out', had ? 'token refused: sign in' : 'sign in needed');
  }

  ui.signIn.addEventListener('click', function () { if (state.mount) signIn(state.mount); });
  ui.signOut.addEventListener('click', function () { signOut(); });
  ui.tokenForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var mount = state.mount;
    if (!mount) return;
    var text = ui.tokenInput.value.trim().replace(/^Bearer\s+/i, '');
    if (!text) { showAuthError('Paste an access token first.'); return; }
    if (!/^[A-Za-z0-9\-._~+\/]+=*$/.test(text)) {
      showAuthError('That is not a bearer token (RFC 6750: letters, digits and -._~+/ only, with no spaces): paste the token alone.');
      return;
    }
    saveToken(mount, { access_token: text, how: 'pasted' });
    if (!savedToken(mount)) {
      showAuthError('This browser keeps nothing in sessionStorage for this page, so the token cannot be kept: allow site data for it.');
      return;
    }
    ui.tokenInput.value = '';
    connect(mount);
  });

  // ------------------------------------------------------------------ page helpers

  // What the page shows of one message at most: a larger one is cut there.
  var SHOWN_CHARS = 200000;

  function pretty(value) {
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
  }

  // The JSON text of value cut after max characters (… marks the cut). It
  // walks no more of the value than it writes and no deeper than 64 levels,
  // so any result, however large or deep, costs at most max.
  function clip(value, max) {
    var out = [];
    var left = max;
    function put(s) {
      if (left <= 0) return;
      if (s.length > left) s = s.slice(0, left);
      out.push(s);
      left -= s.length;
    }
    function walk(v, depth) {
      if (left <= 0) return;
      if (typeof v === 'string') { put(JSON.stringify(v.length > left ? v.slice(0, left) : v)); return; }
      if (v === null || typeof v !== 'object') { put(String(JSON.stringify(v) || 'null')); return; }
      if (depth >= 64) { put(Array.isArray(v) ? '[…]' : '{…}'); return; }
      if (Array.isArray(v)) {
        put('[');
        for (var i = 0; i < v.length && left > 0; i++) { if (i) put(','); walk(v[i], depth + 1); }
        put(']');
        return;
      }
      put('{');
      var first = true;
      for (var k in v) {
        if (left <= 0) break;
        if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
        if (!first) put(',');
        first = false;
        put(JSON.stringify(k) + ':');
        walk(v[k], depth + 1);
      }
      put('}');
    }
    walk(value, 0);
    return left > 0 ? out.join('') : out.join('') + '…';
  }

  function short(value) {
    return value === undefined ? '' : clip(value, 160);
  }

  // Indented when it is small enough to show whole, else its first max
  // characters as one line.
  function shown(value, max) {
    var cut = clip(value, max);
    if (cut.length > max) return cut;
    try { return JSON.stringify(value, null, 2); } catch (e) { return cut; }
  }

  function megabytes(chars) {
    return chars >= 1e6 ? (chars / 1e6).toFixed(1) + ' MB' : Math.ceil(chars / 1e3) + ' KB';
  }

  // A raw panel (request or result): the message indented; one too large
  // or too deep to indent is shown as it arrived, its first SHOWN_CHARS,
  // with a note saying so and a button showing the rest.
  function showMessage(pre, note, message) {
    var text = received.get(message);
    var whole = null;
    var why = null;
    if (text !== undefined && text.length > SHOWN_CHARS) {
      why = 'The first ' + megabytes(SHOWN_CHARS) + ' of ' + megabytes(text.length) + ', as received.';
      whole = text;
      text = text.slice(0, SHOWN_CHARS) + '…';
    } else {
      try {
        text = JSON.stringify(message, null, 2);
      } catch (e) {
        why = 'Too deeply nested to indent (' + e.message + '): as received.';
        if (text === undefined) text = clip(message, SHOWN_CHARS);
      }
    }
    pre.textContent = text;
    note.textContent = '';
    note.hidden = !why;
    if (!why) return;
    note.appendChild(document.createTextNode(why + ' '));
    if (whole !== null) {
      var all = el('button', { type: 'button', className: 'small', text: 'show all' });
      all.addEventListener('click', function () { pre.textContent = whole; note.hidden = true; });
      note.appendChild(all);
    }
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'className') node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function log(kind, dir, method, detail) {
    var item = el('li', { 'data-kind': kind }, [
      el('span', { className: 'dir', text: dir === 'in' ? 'view →' : dir === 'out' ? '→ view' : dir }),
      el('span', { className: 'method', text: method }),
      document.createTextNode(detail === undefined ? '' : ' ' + (typeof detail === 'string' ? detail : short(detail))),
    ]);
    item.title = typeof detail === 'string' ? detail.slice(0, 4000) : shown(detail, 4000);
    ui.bridgeLog.appendChild(item);
    while (ui.bridgeLog.childNodes.length > 300) ui.bridgeLog.removeChild(ui.bridgeLog.firstChild);
    ui.bridgeLog.scrollTop = ui.bridgeLog.scrollHeight;
  }

  function side(kind, label, body, replaceKey) {
    var placeholder = $('side-empty');
    if (placeholder) placeholder.parentNode.removeChild(placeholder);
    var existing = replaceKey ? ui.sidePanel.querySelector('[data-key="' + replaceKey + '"]') : null;
    var item = el('li', { 'data-kind': kind }, [el('strong', { text: label }), body]);
    if (replaceKey) item.setAttribute('data-key', replaceKey);
    if (existing) ui.sidePanel.replaceChild(item, existing);
    else ui.sidePanel.appendChild(item);
  }

  function setConnection(kind, text) {
    ui.connection.setAttribute('data-state', kind);
    ui.connection.textContent = text;
  }

  function uiMeta(tool) {
    var meta = (tool && tool._meta) || {};
    return (meta.ui && typeof meta.ui === 'object') ? meta.ui : {};
  }

  function resourceUriOf(tool) {
    var meta = (tool && tool._meta) || {};
    return uiMeta(tool).resourceUri || meta['ui/resourceUri'] || meta['openai/outputTemplate'] || null;
  }

  // ------------------------------------------------------------------ tools and forms

  function renderToolList() {
    ui.toolList.textContent = '';
    ui.toolsEmpty.hidden = state.tools.length > 0;
    state.tools.forEach(function (tool) {
      var visibility = uiMeta(tool).visibility;
      var badges = [];
      if (resourceUriOf(tool)) badges.push(el('span', { className: 'badge widget', text: 'widget' }));
      if (Array.isArray(visibility) && visibility.indexOf('model') < 0) {
        badges.push(el('span', { className: 'badge', text: 'app only' }));
      }
      var auth = authOf(tool);
      if (auth) badges.push(el('span', { className: 'badge auth', text: auth.text, title: auth.title }));
      var button = el('button', { type: 'button', 'data-tool': tool.name }, [
        el('span', { className: 'name', text: tool.name }, badges),
        tool.title || (tool.annotations && tool.annotations.title)
          ? el('span', { className: 'title', text: tool.title || tool.annotations.title }) : null,
      ]);
      if (state.tool && state.tool.name === tool.name) button.setAttribute('aria-current', 'true');
      button.addEventListener('click', function () { selectTool(tool.name); });
      ui.toolList.appendChild(el('li', {}, [button]));
    });
    renderHostsTable();
  }

  // What calling the tool requires, from its securitySchemes (what the
  // gateway enforces with [auth], and what ChatGPT shows): null when it
  // declares none.
  function authOf(tool) {
    var schemes = tool.securitySchemes || (tool._meta && tool._meta.securitySchemes);
    if (!Array.isArray(schemes) || !schemes.length) return null;
    var anonymous = false;
    var oauth = false;
    var scopes = [];
    schemes.forEach(function (s) {
      if (!s || typeof s !== 'object') return;
      if (s.type === 'noauth') anonymous = true;
      if (s.type === 'oauth2') {
        oauth = true;
        if (Array.isArray(s.scopes)) scopes = scopes.concat(s.scopes);
      }
    });
    if (!oauth) return { text: 'no sign-in', title: 'callable without a token' };
    var needs = scopes.length ? 'a token with ' + scopes.join(' ') : 'a token';
    return {
      text: (anonymous ? 'sign-in optional' : 'sign-in') + (scopes.length ? ': ' + scopes.join(' ') : ''),
      title: anonymous ? 'callable without a token; signed in, it needs ' + needs : 'needs ' + needs,
    };
  }

  function selectTool(name) {
    var tool = state.tools.filter(function (t) { return t.name === name; })[0];
    if (!tool) return;
    state.tool = tool;
    renderToolList();
    ui.toolName.textContent = tool.title ? tool.title + ' (' + tool.name + ')' : tool.name;
    ui.toolDescription.textContent = tool.description || '';
    buildForm(tool.inputSchema || {});
    renderFillFrom(tool);
    ui.form.hidden = false;
    ui.formError.hidden = true;
  }

  // ------------------------------------------------------------------ a render tool's data

  // The data tools a render tool renders the results of (its overlay's
  // data_tools, which the gateway lists in the tool's _meta).
  function dataToolsOf(tool) {
    var r = tool && tool._meta && tool._meta[RENDER_META];
    return r && Array.isArray(r.dataTools) ? r.dataTools.filter(function (n) { return typeof n === 'string'; }) : [];
  }

  function fillNote(text, isError) {
    ui.fillNote.textContent = text || '';
    ui.fillNote.className = isError ? 'error' : 'muted';
    ui.fillNote.hidden = !text;
  }

  // A "Use data from <data tool>" button per data tool of a render tool.
  function renderFillFrom(tool) {
    ui.fillFrom.textContent = '';
    fillNote(null);
    var names = dataToolsOf(tool);
    ui.fillFrom.hidden = !names.length;
    names.forEach(function (name) {
      var button = el('button', { type: 'button', className: 'secondary', 'data-fill-from': name, text: 'Use data from ' + name });
      button.title = 'Call ' + name + ' (or, when it needs arguments, take its last result) and fill this form with its structuredContent';
      button.addEventListener('click', function () { fillFrom(tool, name, button); });
      ui.fillFrom.appendChild(button);
    });
  }

  // Fills the render tool's form with the data tool's structuredContent: of
  // a call made now when the data tool needs no arguments, else of its last
  // call from this page.
  async function fillFrom(tool, name, button) {
    var data = state.tools.filter(function (t) { return t.name === name; })[0];
    var required = data && data.inputSchema && Array.isArray(data.inputSchema.required) ? data.inputSchema.required : [];
    button.disabled = true;
    fillNote(null);
    try {
      var result;
      if (!data) throw new Error(name + ' is not listed at this endpoint');
      if (required.length) {
        result = state.results[name];
        if (!result) {
          throw new Error(name + ' needs arguments (' + required.join(', ') + '): call it from its own form, then come back: '
            + 'its last result fills this form');
        }
      } else {
        var response = await callTool({ name: name, arguments: {} }, '(data for ' + tool.name + ')');
        if (response.error) throw new Error(name + ': ' + (response.error.message || 'error ' + response.error.code));
        result = response.result;
        if (result && result.isError) throw new Error(name + ' answered an error (see the result)');
      }
      var data_ = result && result.structuredContent;
      if (!data_ || typeof data_ !== 'object' || Array.isArray(data_)) {
        throw new Error(name + ' gave no structuredContent object to fill the form with (its overlay can shape one: result = { structured_from_text = true })');
      }
      if (state.tool !== tool) return;
      var filled = fillForm(data_);
      if (!filled.length) {
        throw new Error('none of ' + name + '\'s keys (' + Object.keys(data_).join(', ') + ') is an argument of ' + tool.name);
      }
      fillNote('Filled ' + filled.join(', ') + ' from ' + name + (required.length ? '\'s last result' : '') + ': call the tool to render it.');
    } catch (e) {
      fillNote(e.message, true);
    } finally {
      button.disabled = false;
    }
  }

  // Puts `values` in the form's fields of the same names; the names filled.
  function fillForm(values) {
    var filled = [];
    Array.prototype.forEach.call(ui.fields.querySelectorAll('[data-arg]'), function (input) {
      var name = input.getAttribute('data-arg');
      if (!Object.prototype.hasOwnProperty.call(values, name)) return;
      var v = values[name];
      var kind = input.getAttribute('data-kind');
      if (kind === 'boolean') input.checked = v === true;
      else if (kind === 'enum') {
        var prop = input.parentNode._prop || {};
        var i = (prop.enum || []).map(function (x) { return JSON.stringify(x); }).indexOf(JSON.stringify(v));
        if (i < 0) return;
        input.value = String(i);
      } else if (kind === 'json') input.value = JSON.stringify(v, null, 2);
      else if (v === null || typeof v === 'object') return;
      else input.value = String(v);
      filled.push(name);
    });
    return filled;
  }

  function schemaType(schema) {
    var t = schema.type;
    if (Array.isArray(t)) t = t.filter(function (x) { return x !== 'null'; })[0];
    return t;
  }

  function buildForm(schema) {
    ui.fields.textContent = '';
    var props = (schema && schema.properties) || {};
    var required = Array.isArray(schema.required) ? schema.required : [];
    var names = Object.keys(props);
    if (!names.length) {
      ui.fields.appendChild(el('p', { className: 'muted', text: 'This tool takes no arguments.' }));
    }
    names.forEach(function (name) {
      var prop = props[name] || {};
      var type = schemaType(prop);
      var id = 'arg-' + name;
      var isRequired = required.indexOf(name) >= 0;
      var label = el('label', { 'for': id, text: name + (isRequired ? ' *' : '') });
      var input;
      var kind;
      if (Array.isArray(prop.enum)) {
        kind = 'enum';
        input = el('select', { id: id });
        if (!isRequired) input.appendChild(el('option', { value: '', text: '(none)' }));
        prop.enum.forEach(function (v, i) {
          input.appendChild(el('option', { value: String(i), text: JSON.stringify(v) }));
        });
      } else if (type === 'boolean') {
        kind = 'boolean';
        input = el('input', { id: id, type: 'checkbox' });
        if (prop.default === true) input.checked = true;
      } else if (type === 'integer' || type === 'number') {
        kind = type;
        input = el('input', { id: id, type: 'number', step: type === 'integer' ? '1' : 'any' });
        if (typeof prop.minimum === 'number') input.min = prop.minimum;
        if (typeof prop.maximum === 'number') input.max = prop.maximum;
        if (typeof prop.default === 'number') input.value = prop.default;
      } else if (type === 'string') {
        kind = 'string';
        input = el('input', { id: id, type: 'text' });
        if (typeof prop.default === 'string') input.value = prop.default;
        if (prop.format) input.placeholder = prop.format;
      } else {
        kind = 'json';
        input = el('textarea', { id: id, spellcheck: 'false' });
        input.placeholder = type === 'array' ? '[ … ] (JSON)' : type === 'object' ? '{ … } (JSON)' : 'JSON value';
        if (prop.default !== undefined) input.value = JSON.stringify(prop.default, null, 2);
      }
      input.setAttribute('data-arg', name);
      input.setAttribute('data-kind', kind);
      if (isRequired) input.setAttribute('data-required', 'true');
      var hint = prop.description ? el('span', { className: 'hint', text: prop.description }) : null;
      var typeHint = el('span', { className: 'hint', text: kind === 'json' ? (type || 'any') + ', as JSON' : kind });
      var field = el('div', { className: 'field' + (kind === 'boolean' ? ' checkbox' : '') },
        kind === 'boolean' ? [input, label, hint] : [label, input, hint || typeHint]);
      field._prop = prop;
      ui.fields.appendChild(field);
    });
  }

  // The arguments the form holds, or throws an Error naming the field.
  function collectArguments() {
    var args = {};
    Array.prototype.forEach.call(ui.fields.querySelectorAll('[data-arg]'), function (input) {
      var name = input.getAttribute('data-arg');
      var kind = input.getAttribute('data-kind');
      var required = input.getAttribute('data-required') === 'true';
      var prop = input.parentNode._prop || {};
      if (kind === 'boolean') { args[name] = input.checked; return; }
      var raw = input.value;
      if (raw === '' || (kind === 'json' && !raw.trim())) {
        if (required) throw new Error(name + ': required');
        return;
      }
      if (kind === 'enum') { args[name] = prop.enum[Number(raw)]; return; }
      if (kind === 'string') { args[name] = raw; return; }
      if (kind === 'integer' || kind === 'number') {
        var n = Number(raw);
        if (!Number.isFinite(n)) throw new Error(name + ': not a number');
        if (kind === 'integer' && !Number.isInteger(n)) throw new Error(name + ': not an integer');
        args[name] = n;
        return;
      }
      try { args[name] = JSON.parse(raw); } catch (e) { throw new Error(name + ': invalid JSON (' + e.message + ')'); }
    });
    return args;
  }

  ui.form.addEventListener('submit', function (event) {
    event.preventDefault();
    var tool = state.tool;
    if (!tool) return;
    var args;
    try {
      args = collectArguments();
    } catch (e) {
      ui.formError.textContent = e.message;
      ui.formError.hidden = false;
      return;
    }
    ui.formError.hidden = true;
    callFromForm(tool, args);
  });

  async function callTool(params, origin) {
    ui.requestOrigin.textContent = origin;
    ui.resultState.textContent = '(waiting…)';
    ui.rawResult.textContent = '…';
    ui.resultNote.hidden = true;
    var mcp = state.mcp;
    try {
      // The body as sent (request() builds it before its first await).
      var pending = mcp.request('tools/call', params);
      showMessage(ui.rawRequest, ui.requestNote, mcp.lastRequest);
      var response = await pending;
      showMessage(ui.rawResult, ui.resultNote, response);
      ui.resultState.textContent = response.error ? '(JSON-RPC error)' : response.result && response.result.isError ? '(isError)' : '(ok)';
      if (response.result && !response.result.isError) state.results[params.name] = response.result;
      return response;
    } catch (e) {
      ui.rawResult.textContent = String(e.message || e);
      ui.resultState.textContent = e.auth ? '(HTTP ' + e.auth.status + ': sign in)' : '(failed)';
      // A tool that needs a token (an anonymous caller's call): sign in.
      if (e.auth) authRefused(mcp.mount, e);
      throw e;
    }
  }

  async function callFromForm(tool, args) {
    ui.callButton.disabled = true;
    try {
      var response = await callTool({ name: tool.name, arguments: args }, '(from the form)');
      if (response.error) return;
      state.lastCall = { tool: tool, arguments: args, result: response.result };
      if (resourceUriOf(tool)) await renderWidget(tool, args, response.result);
    } catch (e) {
      /* shown in the result panel */
    } finally {
      ui.callButton.disabled = false;
    }
  }

  // ------------------------------------------------------------------ host context

  function hostContext(tool) {
    var ctx = {
      theme: state.theme,
      displayMode: state.displayMode,
      availableDisplayModes: DISPLAY_MODES.slice(),
      locale: state.locale,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: navigator.userAgent,
      platform: 'web',
      deviceCapabilities: { touch: navigator.maxTouchPoints > 0, hover: true },
      safeAreaInsets: { top: 0, right: 0, bottom: 0, left: 0 },
      containerDimensions: { maxHeight: 2000 },
    };
    if (tool) ctx.toolInfo = { tool: tool };
    return asHost(ctx);
  }

  function changeHostContext(partial) {
    Object.keys(partial).forEach(function (k) { state[k] = partial[k]; });
    document.body.setAttribute('data-theme', state.theme);
    ui.theme.value = state.theme;
    ui.displayMode.value = state.displayMode;
    ui.locale.value = state.locale;
    applyDisplayMode();
    var view = state.view;
    if (view && view.initialized) notifyView(view, 'ui/notifications/host-context-changed', hostChange(partial));
  }

  function applyDisplayMode() {
    ui.widgetHost.setAttribute('data-display-mode', state.displayMode);
    ui.exitMode.hidden = state.displayMode === 'inline' || !state.view;
  }

  ui.theme.addEventListener('change', function () { changeHostContext({ theme: ui.theme.value }); });
  ui.displayMode.addEventListener('change', function () { changeHostContext({ displayMode: ui.displayMode.value }); });
  ui.locale.addEventListener('change', function () { changeHostContext({ locale: ui.locale.value }); });
  ui.exitMode.addEventListener('click', function () { changeHostContext({ displayMode: 'inline' }); });
  ui.clearLog.addEventListener('click', function () { ui.bridgeLog.textContent = ''; });

  // ------------------------------------------------------------------ what each host sees

  // The hosts the widget can be rendered as, side by side in "What each host
  // sees": what an author should check before submitting. The style
  // variables are stand-ins in MCP Apps' standard names, one set a theme (the
  // hosts' own values differ and change); what matters is that the widget
  // follows them. Sources:
  // - ChatGPT reads _meta.ui.visibility (openai/visibility is deprecated,
  //   developers.openai.com/plugins/changelog, July 2026) and refuses a
  //   widget's call to a tool without openai/widgetAccessible; it sends
  //   hostContext.styles.variables (May 2026); its inline frame is as tall
  //   as the widget reports, with no cap (window.openai.maxHeight unset
  //   inline; fullscreen or pip for more); widgets run at the app's origin
  //   under web-sandbox.oaiusercontent.com; CSP from openai/widgetCSP.
  // - Claude is an MCP Apps host: _meta.ui.visibility, widgets inline at most
  //   500 px high (Anthropic's directory checklist), a sandbox origin per
  //   server under claudemcpcontent.com, CSP from _meta.ui.csp.
  var FONT = 'ui-sans-serif, system-ui, -apple-system, "Segoe UI", sans-serif';
  var HOSTS = {
    apps: {
      label: 'MCP Apps host', info: HOST_INFO, inlineMax: null, styles: null,
      height: 'as tall as the widget reports (this page: at most 2000 px)',
    },
    chatgpt: {
      label: 'ChatGPT', info: { name: 'chatgpt', version: 'preview' }, inlineMax: null,
      styles: {
        light: { '--color-background-primary': 'rgb(255, 255, 255)', '--color-text-primary': 'rgb(13, 13, 13)', '--font-sans': FONT },
        dark: { '--color-background-primary': 'rgb(33, 33, 33)', '--color-text-primary': 'rgb(236, 236, 236)', '--font-sans': FONT },
      },
      height: 'inline: as tall as the widget reports, no cap; fullscreen or pip for more',
    },
    claude: {
      label: 'Claude', info: { name: 'Claude', version: 'preview' }, inlineMax: 500,
      styles: {
        light: { '--color-background-primary': 'rgb(250, 249, 245)', '--color-text-primary': 'rgb(20, 20, 19)', '--font-sans': FONT },
        dark: { '--color-background-primary': 'rgb(38, 38, 36)', '--color-text-primary': 'rgb(250, 249, 245)', '--font-sans': FONT },
      },
      height: 'inline: at most 500 px',
    },
  };
  window.__previewHosts = HOSTS;

  function hostStyles() {
    var styles = HOSTS[state.host].styles;
    return styles ? styles[state.theme] || styles.light : null;
  }

  // The widget's most height inline, as the host tells it (containerDimensions, maxHeight).
  function hostMaxHeight() {
    var cap = HOSTS[state.host].inlineMax;
    return cap && state.displayMode === 'inline' ? cap : 2000;
  }

  // The page's host context as the chosen host gives it.
  function asHost(ctx) {
    var vars = hostStyles();
    if (vars) ctx.styles = { variables: vars };
    ctx.containerDimensions = { maxHeight: hostMaxHeight() };
    return ctx;
  }

  // A host context change as the chosen host sends it: a new theme brings
  // its style variables.
  function hostChange(partial) {
    var sent = {};
    Object.keys(partial).forEach(function (k) { sent[k] = partial[k]; });
    var vars = hostStyles();
    if (partial.theme && vars) sent.styles = { variables: vars };
    if (partial.displayMode) sent.containerDimensions = { maxHeight: hostMaxHeight() };
    return sent;
  }

  function renderedAsHost(view) {
    ui.widgetHost.setAttribute('data-host', view.host);
    view.iframe.setAttribute('data-host', view.host);
    ui.hostNote.textContent = HOSTS[view.host].height;
    renderHostsTable();
  }

  // What the widget says of its size, as the chosen host takes it: Claude
  // keeps an inline widget at most 500 px high, whatever it reports.
  function hostSaw(view, method, params) {
    if (method !== 'ui/notifications/size-changed' || typeof params.height !== 'number') return;
    view.reportedHeight = Math.ceil(params.height);
    var cap = HOSTS[view.host].inlineMax;
    if (cap && state.displayMode === 'inline' && view.reportedHeight > cap) view.iframe.style.height = cap + 'px';
    renderHostsTable();
  }

  ui.previewHost.addEventListener('change', function () {
    state.host = HOSTS[ui.previewHost.value] ? ui.previewHost.value : 'apps';
    var view = state.view;
    if (view && !view.closed) renderWidget(view.tool, view.arguments, view.result);
    else renderHostsTable();
  });

  // Who each host lets see a tool: the model (no visibility, or one with
  // "model"), the app only, and which tools a widget may call.
  function toolAudiences() {
    var model = [], appOnly = [], appCalls = [], chatgptCalls = [], legacy = [];
    state.tools.forEach(function (tool) {
      var visibility = uiMeta(tool).visibility;
      var meta = tool._meta || {};
      var seen = !Array.isArray(visibility) || visibility.indexOf('model') >= 0;
      (seen ? model : appOnly).push(tool.name);
      if (!Array.isArray(visibility) || visibility.indexOf('app') >= 0) appCalls.push(tool.name);
      if (meta['openai/widgetAccessible'] === true) chatgptCalls.push(tool.name);
      if (meta['openai/visibility'] !== undefined) legacy.push(tool.name + ' (' + meta['openai/visibility'] + ')');
    });
    return { model: model, appOnly: appOnly, appCalls: appCalls, chatgptCalls: chatgptCalls, legacy: legacy };
  }

  function names(list, none) { return list.length ? list.join(', ') : none; }

  // A host's CSP of the rendered widget, from the resource's _meta.ui.csp
  // (MCP Apps hosts, Claude) or openai/widgetCSP (ChatGPT, falling back to
  // _meta.ui.csp): where it may connect, load from, frame and send links.
  function cspOf(host, contentMeta) {
    var declared = (contentMeta.ui && contentMeta.ui.csp) || {};
    var legacy = host === 'chatgpt' ? contentMeta['openai/widgetCSP'] : null;
    var list = function (v) { return Array.isArray(v) && v.length ? v.join(' ') : "'none'"; };
    var parts = legacy ? [
      'connect-src ' + list(legacy.connect_domains), 'resources ' + list(legacy.resource_domains),
      'frame-src ' + list(legacy.frame_domains), 'redirects ' + list(legacy.redirect_domains),
    ] : [
      'connect-src ' + list(declared.connectDomains), 'resources ' + list(declared.resourceDomains),
      'frame-src ' + list(declared.frameDomains), 'base-uri ' + list(declared.baseUriDomains),
    ];
    return (legacy ? 'openai/widgetCSP: ' : '_meta.ui.csp: ') + parts.join('; ');
  }

  // The origin a host serves the widget at.
  function originOf(host, view) {
    var origins = state.mount && state.mount.origins;
    if (host === 'apps') {
      var domain = view && view.meta && view.meta.domain;
      return 'this page\'s sandbox (an opaque origin)' + (domain ? '; _meta.ui.domain ' + domain : '');
    }
    if (!origins) return 'set public_url to derive it';
    return host === 'chatgpt' ? origins.chatgpt : origins.claude + ' (per server)';
  }

  function heightOf(host, view) {
    var said = HOSTS[host].height;
    if (!view || view.reportedHeight === null) return [said];
    var cap = HOSTS[host].inlineMax;
    var over = cap && view.reportedHeight > cap;
    var text = 'reported ' + view.reportedHeight + ' px' + (cap ? ' of at most ' + cap : '');
    return [said, el('br'), el('span', { className: over ? 'over' : '', text: over ? text + ': cut off' : text })];
  }

  function renderHostsTable() {
    var body = ui.hostsTable.tBodies[0];
    body.textContent = '';
    var a = toolAudiences();
    var view = state.view && !state.view.closed ? state.view : null;
    var rows = [
      ['model', 'The model sees', function () { return names(a.model, 'no tool'); }],
      ['app-only', 'Only the app (app only)', function (h) {
        return names(a.appOnly, 'none') + (h === 'chatgpt' && a.legacy.length ? ' · openai/visibility: ' + a.legacy.join(', ') : '');
      }],
      ['calls', 'The widget may call', function (h) { return names(h === 'chatgpt' ? a.chatgptCalls : a.appCalls, 'no tool'); }],
      ['origin', 'Widget origin', function (h) { return originOf(h, view); }],
      ['height', 'Height', function (h) { return heightOf(h, view); }],
      ['csp', 'CSP', function (h) { return view ? cspOf(h, view.contentMeta) : 'render a widget to see it'; }],
    ];
    rows.forEach(function (row) {
      var tr = el('tr', { 'data-row': row[0] }, [el('th', { scope: 'row', text: row[1] })]);
      Object.keys(HOSTS).forEach(function (h) {
        var shown = row[2](h);
        var td = el('td', { 'data-host': h }, Array.isArray(shown) ? shown.map(function (x) {
          return typeof x === 'string' ? document.createTextNode(x) : x;
        }) : [document.createTextNode(shown)]);
        if (h === state.host) td.setAttribute('data-current', '');
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    Array.prototype.forEach.call(ui.hostsTable.tHead.rows[0].cells, function (th) {
      if (th.getAttribute('data-host') === state.host) th.setAttribute('data-current', '');
      else th.removeAttribute('data-current');
    });
  }

  // ------------------------------------------------------------------ the widget and its bridge

  // Runs inside the widget document (serialized into it): window.openai for
  // widgets written against ChatGPT, on top of the same ui/* bridge.
  function openaiCompat(init) {
    var seq = 0;
    var pending = {};
    var bridgeSeen = false;
    // toolInput is empty until ui/notifications/tool-input: ChatGPT sends a
    // call's arguments only once the user approved it (plugin UI changelog,
    // May 2026), and nothing fills them in before.
    var globals = {
      toolInput: {}, toolOutput: init.toolOutput, toolResponseMetadata: init.toolResponseMetadata,
      widgetState: null, theme: init.theme, displayMode: init.displayMode, locale: init.locale,
      maxHeight: init.maxHeight, safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } },
      userAgent: { device: { type: 'desktop' }, capabilities: { hover: true, touch: false } },
      view: { mode: init.displayMode, params: null },
    };
    // The host's CSS variables (hostContext.styles.variables) on the
    // document root; window.openai has no field for them.
    function applyStyles(vars) {
      if (!vars || typeof vars !== 'object') return;
      Object.keys(vars).forEach(function (k) {
        if (/^--[\w-]+$/.test(k) && typeof vars[k] === 'string') document.documentElement.style.setProperty(k, vars[k]);
      });
    }
    applyStyles(init.styles);
    function post(message) { window.parent.postMessage(message, '*'); }
    function request(method, params) {
      var id = 'openai:' + (++seq);
      return new Promise(function (resolve, reject) {
        pending[id] = { resolve: resolve, reject: reject };
        post({ jsonrpc: '2.0', id: id, method: method, params: params });
      });
    }
    function setGlobals(partial) {
      Object.keys(partial).forEach(function (k) { globals[k] = partial[k]; });
      if (partial.displayMode) globals.view = { mode: partial.displayMode, params: null };
      window.dispatchEvent(new CustomEvent('openai:set_globals', { detail: { globals: partial } }));
    }
    var api = {
      callTool: function (name, args) { return request('tools/call', { name: name, arguments: args || {} }); },
      sendFollowUpMessage: function (o) {
        return request('ui/message', { role: 'user', content: [{ type: 'text', text: String((o && o.prompt) || '') }] })
          .then(function () {});
      },
      openExternal: function (o) { return request('ui/open-link', { url: String((o && o.href) || '') }).then(function () {}); },
      requestDisplayMode: function (o) {
        return request('ui/request-display-mode', { mode: o && o.mode }).then(function (r) {
          setGlobals({ displayMode: r.mode });
          return { mode: r.mode };
        });
      },
      setWidgetState: function (s) {
        setGlobals({ widgetState: s });
        return request('ui/update-model-context', { structuredContent: { widgetState: s } }).then(function () {});
      },
      notifyIntrinsicHeight: function (h) {
        post({ jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: Math.ceil(Number(h) || 0) } });
      },
      requestClose: function () { post({ jsonrpc: '2.0', method: 'ui/notifications/request-teardown', params: {} }); },
    };
    Object.keys(globals).forEach(function (k) {
      Object.defineProperty(api, k, { enumerable: true, get: function () { return globals[k]; } });
    });
    window.openai = api;
    window.addEventListener('message', function (event) {
      if (event.source !== window.parent) return;
      var m = event.data;
      if (!m || typeof m !== 'object' || m.jsonrpc !== '2.0') return;
      if (m.method === undefined) {
        var waiter = pending[m.id];
        if (waiter) {
          delete pending[m.id];
          if (m.error) waiter.reject(new Error(m.error.message || 'error ' + m.error.code));
          else waiter.resolve(m.result);
        } else if (m.result && m.result.protocolVersion && m.result.hostContext) {
          bridgeSeen = true; // the widget initialised the bridge itself
        }
        return;
      }
      var p = m.params || {};
      if (m.method === 'ui/notifications/tool-input') setGlobals({ toolInput: p.arguments || {} });
      else if (m.method === 'ui/notifications/tool-result') {
        setGlobals({ toolOutput: p.structuredContent === undefined ? null : p.structuredContent,
          toolResponseMetadata: p._meta === undefined ? null : p._meta });
      } else if (m.method === 'ui/notifications/host-context-changed') {
        applyStyles(p.styles && p.styles.variables);
        var g = {};
        ['theme', 'displayMode', 'locale'].forEach(function (k) { if (p[k] !== undefined) g[k] = p[k]; });
        if (Object.keys(g).length) setGlobals(g);
      }
    });
    // A widget that only knows window.openai never starts the bridge, nor
    // says how tall it is (ChatGPT measures it): do both for it, the height
    // being the content's own on every change.
    var sent = 0;
    function size() {
      var html = document.documentElement;
      var was = html.style.height;
      html.style.height = 'max-content';
      var height = Math.ceil(html.getBoundingClientRect().height);
      html.style.height = was;
      if (height && height !== sent) {
        sent = height;
        post({ jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: height } });
      }
    }
    window.addEventListener('load', function () {
      setTimeout(function () {
        if (bridgeSeen) return;
        request('ui/initialize', {
          appInfo: { name: 'window.openai', version: '1.0.0' }, appCapabilities: {}, protocolVersion: init.protocolVersion,
        }).then(function () {
          post({ jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} });
          if (window.ResizeObserver) new ResizeObserver(size).observe(document.body);
          size();
        }, function () {});
      }, 800);
    });
  }

  function safeJson(value) {
    return JSON.stringify(value === undefined ? null : value)
      .replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  }

  // The widget document: the resource's HTML with the window.openai object first in <head>.
  // Its data goes in as JSON text the widget parses (a script literal as deep as a
  // result can be would overflow the script parser); a result too deep to write is
  // left for the tool-result notification.
  function prepareHtml(html, init) {
    var json;
    try {
      json = JSON.stringify(init);
    } catch (e) {
      init.toolOutput = null;
      init.toolResponseMetadata = null;
      json = JSON.stringify(init);
    }
    var script = '<script>(' + openaiCompat.toString() + ')(JSON.parse(' + safeJson(json) + '));</script>';
    var head = /<head\b[^>]*>/i.exec(html);
    if (head) return html.slice(0, head.index + head[0].length) + script + html.slice(head.index + head[0].length);
    var htmlTag = /<html\b[^>]*>/i.exec(html);
    if (htmlTag) {
      var at = htmlTag.index + htmlTag[0].length;
      return html.slice(0, at) + '<head>' + script + '</head>' + html.slice(at);
    }
    return script + html;
  }

  // _meta.ui.permissions -> the iframe's allow attribute.
  function allowAttribute(permissions) {
    var features = { camera: 'camera', microphone: 'microphone', geolocation: 'geolocation', clipboardWrite: 'clipboard-write' };
    return Object.keys(permissions || {}).filter(function (k) {
      return features[k] && permissions[k];
    }).map(function (k) { return features[k]; }).join('; ');
  }

  function decodeContent(content) {
    if (typeof content.text === 'string') return content.text;
    if (typeof content.blob === 'string') {
      var bin = atob(content.blob);
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new TextDecoder().decode(bytes);
    }
    throw new Error('the resource has neither text nor blob');
  }

  // Posts to the widget; a message the browser cannot pass (a result nested
  // deeper than structured cloning goes) throws, and the caller says so.
  function postToView(view, message) {
    if (view.iframe.contentWindow) view.iframe.contentWindow.postMessage(message, '*');
  }

  function unpassable(e) {
    return 'the page cannot pass this result to the widget (' + (e && e.message || e) + ')';
  }

  function notifyView(view, method, params) {
    log('info', 'out', method, params);
    try {
      postToView(view, { jsonrpc: '2.0', method: method, params: params });
    } catch (e) {
      if (method !== 'ui/notifications/tool-result') throw e;
      // The widget learns the call ended, and why it has nothing to show.
      log('error', 'out', method, unpassable(e));
      notifyView(view, 'ui/notifications/tool-cancelled', { reason: unpassable(e) });
    }
  }

  function requestView(view, method, params, timeoutMs) {
    var id = 'host:' + (view.nextId++);
    log('info', 'out', method, params);
    return new Promise(function (resolve, reject) {
      var timer = setTimeout(function () {
        delete view.pending[id];
        reject(new Error(method + ': no answer within ' + timeoutMs + ' ms'));
      }, timeoutMs);
      view.pending[id] = { resolve: resolve, reject: reject, timer: timer };
      postToView(view, { jsonrpc: '2.0', id: id, method: method, params: params });
    });
  }

  async function teardown(view) {
    if (!view || view.closed) return;
    if (view.initialized) {
      try { await requestView(view, 'ui/resource-teardown', {}, 1000); } catch (e) { /* removed anyway */ }
    }
    view.closed = true;
    if (view.iframe.parentNode) view.iframe.parentNode.removeChild(view.iframe);
  }

  async function renderWidget(tool, args, result, onlyIfChanged) {
    var uri = resourceUriOf(tool);
    var read;
    try {
      read = await state.mcp.call('resources/read', { uri: uri });
    } catch (e) {
      log('error', 'gateway', 'resources/read', e.message);
      ui.widgetUri.textContent = uri + ' (could not be read: ' + e.message + ')';
      return;
    }
    var content = (read.contents || []).filter(function (c) { return c && c.uri === uri; })[0] || (read.contents || [])[0];
    if (!content) { log('error', 'gateway', 'resources/read', 'no contents for ' + uri); return; }
    var meta = (content._meta && content._meta.ui) || {};
    var csp = meta.csp || {};
    var html = decodeContent(content);
    var current = state.view;
    if (onlyIfChanged && current && !current.closed && current.uri === uri && current.source === html
      && JSON.stringify(current.meta) === JSON.stringify(meta)) {
      log('info', 'host', 'reload', uri + ' is unchanged: kept');
      return;
    }
    var init = {
      toolOutput: result && result.structuredContent !== undefined ? result.structuredContent : null,
      toolResponseMetadata: result && result._meta !== undefined ? result._meta : null,
      theme: state.theme, displayMode: state.displayMode, locale: state.locale, maxHeight: hostMaxHeight(),
      protocolVersion: APPS_PROTOCOL_VERSION, styles: hostStyles(),
    };
    await teardown(state.view);
    var iframe = el('iframe', {
      title: 'Widget of ' + tool.name,
      sandbox: 'allow-scripts allow-forms',
      referrerpolicy: 'no-referrer',
      src: '/preview/sandbox?csp=' + encodeURIComponent(JSON.stringify(csp)),
    });
    if (meta.prefersBorder) iframe.className = 'bordered';
    var allow = allowAttribute(meta.permissions);
    if (allow) iframe.setAttribute('allow', allow);
    var view = {
      iframe: iframe, tool: tool, uri: uri, csp: csp, arguments: args, result: result,
      html: prepareHtml(html, init), source: html, meta: meta, initialized: false, closed: false, nextId: 1, pending: {},
      mimeType: content.mimeType, contentMeta: content._meta || {}, host: state.host, reportedHeight: null,
    };
    state.view = view;
    ui.widgetEmpty.hidden = true;
    ui.widgetUri.textContent = uri;
    ui.widgetHost.appendChild(iframe);
    applyDisplayMode();
    renderedAsHost(view);
    log('info', 'host', 'render', uri + ' · ' + content.mimeType + ' · csp ' + short(csp));
  }

  function respond(view, id, result) {
    log('info', 'out', '(result)', result);
    try {
      postToView(view, { jsonrpc: '2.0', id: id, result: result });
    } catch (e) {
      respondError(view, id, -32603, unpassable(e));
    }
  }

  function respondError(view, id, code, message) {
    log('error', 'out', '(error)', message);
    postToView(view, { jsonrpc: '2.0', id: id, error: { code: code, message: message } });
  }

  function onViewMessage(view, msg) {
    if (msg.method === 'ui/notifications/sandbox-proxy-ready') {
      postToView(view, { jsonrpc: '2.0', method: 'ui/notifications/sandbox-resource-ready', params: { html: view.html } });
      return;
    }
    if (msg.method === undefined) {
      var waiter = view.pending[msg.id];
      if (!waiter) return;
      delete view.pending[msg.id];
      clearTimeout(waiter.timer);
      log(msg.error ? 'error' : 'info', 'in', '(result)', msg.error || msg.result);
      if (msg.error) waiter.reject(new Error(msg.error.message)); else waiter.resolve(msg.result);
      return;
    }
    var params = msg.params || {};
    var isRequest = msg.id !== undefined && msg.id !== null;
    log('info', 'in', msg.method, params);
    if (!isRequest) {
      onViewNotification(view, msg.method, params);
      hostSaw(view, msg.method, params);
      return;
    }
    onViewRequest(view, msg.id, msg.method, params).then(function (result) {
      if (!view.closed) respond(view, msg.id, result);
    }, function (err) {
      if (!view.closed) respondError(view, msg.id, err.code || -32000, err.message || String(err));
    });
  }

  function onViewNotification(view, method, params) {
    switch (method) {
      case 'ui/notifications/initialized':
        if (view.initialized) return;
        view.initialized = true;
        notifyView(view, 'ui/notifications/tool-input', { arguments: view.arguments || {} });
        if (view.result) notifyView(view, 'ui/notifications/tool-result', view.result);
        break;
      case 'ui/notifications/size-changed':
        if (typeof params.height === 'number' && params.height > 0) {
          view.iframe.style.height = Math.min(Math.max(Math.ceil(params.height), 60), 2000) + 'px';
        }
        break;
      case 'ui/notifications/request-teardown':
        side('info', 'Teardown requested', el('pre', { text: 'The widget asked to be closed.' }));
        break;
      default:
        break;
    }
  }

  // Why the hosts would refuse the widget a call of the tool `name`, naming
  // the tool and what to set in the overlay; null when they would allow it.
  // MCP Apps hosts refuse a tool whose _meta.ui.visibility lacks "app";
  // ChatGPT one without _meta["openai/widgetAccessible"] = true. A name the
  // mount does not list goes to the server, which answers for it.
  function refusedToWidget(name) {
    var tool = state.tools.filter(function (t) { return t.name === name; })[0];
    if (!tool) return null;
    var visibility = uiMeta(tool).visibility;
    var key = /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
    var fix = '; to let widgets call it, set visibility = ["model", "app"] (or ["app"]) under [tools.' + key +
      '] in the mount\'s overlay';
    if (Array.isArray(visibility) && visibility.indexOf('app') < 0) {
      return 'the widget may not call ' + JSON.stringify(name) + ': its _meta.ui.visibility ' + JSON.stringify(visibility) +
        ' lacks "app", and MCP Apps hosts refuse a widget\'s call to such a tool' + fix;
    }
    if ((tool._meta || {})['openai/widgetAccessible'] !== true) {
      return 'the widget may not call ' + JSON.stringify(name) + ': it lacks _meta["openai/widgetAccessible"] = true, and ' +
        'ChatGPT refuses a widget\'s call to such a tool' + fix + ' (the gateway then writes openai/widgetAccessible)';
    }
    return null;
  }

  async function onViewRequest(view, id, method, params) {
    switch (method) {
      case 'ui/initialize':
        return {
          protocolVersion: APPS_PROTOCOL_VERSION,
          hostInfo: HOSTS[view.host].info,
          hostCapabilities: {
            openLinks: {}, serverTools: {}, serverResources: {}, logging: {},
            updateModelContext: { text: {}, structuredContent: {} },
            message: { text: {} },
            sandbox: { csp: view.csp },
          },
          hostContext: hostContext(view.tool),
        };
      case 'ping':
        return {};
      case 'tools/call': {
        var refused = refusedToWidget(params.name);
        if (refused) {
          log('error', 'host', 'tools/call refused', refused);
          ui.requestOrigin.textContent = '(from the widget)';
          ui.resultState.textContent = '(refused)';
          ui.rawResult.textContent = refused;
          ui.resultNote.hidden = true;
          var no = new Error(refused);
          no.code = -32000;
          throw no;
        }
        var response = await callTool(params, '(from the widget)');
        if (response.error) {
          var err = new Error(response.error.message);
          err.code = response.error.code;
          throw err;
        }
        return response.result;
      }
      case 'resources/read':
        return state.mcp.call('resources/read', params);
      case 'ui/open-link': {
        var url = String(params.url || '');
        if (!/^https?:\/\//i.test(url)) {
          var denied = new Error('only http and https links are opened');
          denied.code = -32000;
          throw denied;
        }
        var link = el('a', { href: url, target: '_blank', rel: 'noopener noreferrer', text: url });
        side('link', 'Link the widget opens', link);
        return {};
      }
      case 'ui/message': {
        var text = (Array.isArray(params.content) ? params.content : [params.content]).map(function (c) {
          return c && c.type === 'text' ? String(c.text).slice(0, SHOWN_CHARS) : shown(c, SHOWN_CHARS);
        }).join('\n');
        side('message', 'Message to the model (' + (params.role || 'user') + ')', el('pre', { text: text }));
        return {};
      }
      case 'ui/update-model-context':
        state.modelContext = params;
        side('context', 'Model context (latest)', el('pre', { text: shown(params, SHOWN_CHARS) }), 'model-context');
        return {};
      case 'ui/request-display-mode': {
        var mode = DISPLAY_MODES.indexOf(params.mode) >= 0 ? params.mode : state.displayMode;
        if (mode !== state.displayMode) changeHostContext({ displayMode: mode });
        return { mode: mode };
      }
      default: {
        var unknown = new Error('Method not found: ' + method);
        unknown.code = -32601;
        throw unknown;
      }
    }
  }

  window.addEventListener('message', function (event) {
    var view = state.view;
    if (!view || view.closed || event.source !== view.iframe.contentWindow) return;
    var msg = event.data;
    if (!msg || typeof msg !== 'object' || msg.jsonrpc !== '2.0') return;
    onViewMessage(view, msg);
  });

  // ------------------------------------------------------------------ overlay reloads

  var relistTimer = null;
  var relisting = Promise.resolve();
  function onServerNotification(msg) {
    log('info', 'gateway', msg.method, msg.params || {});
    if (msg.method === 'notifications/tools/list_changed' || msg.method === 'notifications/resources/list_changed') {
      clearTimeout(relistTimer);
      // One re-list at a time, in order.
      relistTimer = setTimeout(function () { relisting = relisting.then(relist).catch(function (e) { log('error', 'host', 'reload', e.message); }); }, 60);
    }
  }

  // Lists again; a widget on screen whose resource changed is rendered again
  // with the same input and result.
  async function relist() {
    try {
      await listTools();
    } catch (e) {
      log('error', 'gateway', 'tools/list', e.message);
      return;
    }
    if (state.tool) {
      var fresh = state.tools.filter(function (t) { return t.name === state.tool.name; })[0];
      if (fresh) { state.tool = fresh; renderToolList(); }
    }
    var view = state.view;
    if (!view) return;
    var tool = state.tools.filter(function (t) { return t.name === view.tool.name; })[0] || view.tool;
    state.reloads = (state.reloads || 0) + 1;
    await renderWidget(tool, view.arguments, view.result, true);
  }

  // The tools of `mcp` (default: the current session), shown unless
  // another mount was chosen meanwhile.
  async function listTools(mcp) {
    mcp = mcp || state.mcp;
    var tools = [];
    var cursor;
    for (var page = 0; page < 50; page++) {
      var result = await mcp.call('tools/list', cursor ? { cursor: cursor } : {});
      if (state.mcp !== mcp) return;
      tools = tools.concat(result.tools || []);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    state.tools = tools;
    renderToolList();
  }

  // ------------------------------------------------------------------ start

  // Connects to `mount`: signed in, or without a token where it needs none
  // (or lets callers without one list: anonymous). `opts.error` is shown
  // in the sign-in panel (a sign-in that failed), `opts.notice` in the log.
  async function connect(mount, opts) {
    opts = opts || {};
    if (state.mcp) state.mcp.close();
    state.mount = mount;
    await teardown(state.view);
    state.view = null;
    state.tool = null;
    state.tools = [];
    ui.form.hidden = true;
    ui.widgetEmpty.hidden = false;
    ui.widgetUri.textContent = '';
    ui.toolName.textContent = 'Choose a tool';
    ui.toolDescription.textContent = '';
    ui.toolsEmpty.textContent = 'No tools.';
    renderToolList();
    renderAccount(mount);
    if (opts.notice) log('info', 'host', 'sign-out', opts.notice);
    var signedOut = mount.auth && !savedToken(mount);
    if (signedOut || opts.error) showSignIn(mount, opts.error || null);
    else hideSignIn();
    if (signedOut && !mount.auth.anonymous) {
      // Nothing to list without a token: the sign-in panel, no request.
      ui.toolsEmpty.textContent = 'Sign in (above) to list the tools.';
      ui.server.textContent = mount.path;
      ui.origins.textContent = '';
      setConnection('signed-out', 'sign in needed');
      state.mcp = null;
      return;
    }
    setConnection('connecting', 'connecting…');
    var mcp = new Mcp(mount);
    mcp.onAuthRefused = function (e) { authRefused(mount, e); };
    mcp.onNotification = onServerNotification;
    mcp.onRecovered = function () {
      log('info', 'gateway', 'session', 'new session ' + mcp.sessionId);
      relisting = relisting.then(relist).catch(function (e) { log('error', 'host', 'reload', e.message); });
    };
    state.mcp = mcp;
    try {
      await mcp.connect();
      // Another mount was chosen meanwhile: this session is not wanted
      // (closed again now that it has an id to end).
      if (state.mcp !== mcp) { mcp.close(); return; }
      var info = mcp.serverInfo || {};
      ui.server.textContent = mount.path + ' → ' + (info.name || '?') + (info.version ? ' ' + info.version : '');
      // Where the hosts render this endpoint's widgets (from public_url).
      ui.origins.textContent = mount.origins
        ? 'widgets at ChatGPT ' + mount.origins.chatgpt + ' · Claude ' + mount.origins.claude
        : '';
      ui.origins.title = mount.origins
        ? 'Derived from ' + mount.origins.endpoint + ': allow both origins in the CORS and frame-ancestors of the APIs the widgets call'
        : '';
      await listTools(mcp);
      if (state.mcp === mcp && !mcp.streaming) setConnection('connected', 'connected');
    } catch (e) {
      if (state.mcp !== mcp) return;
      if (e.auth) {
        authRefused(mount, e);
        ui.toolsEmpty.textContent = 'Sign in (above) to list the tools.';
        return;
      }
      setConnection('error', 'error: ' + e.message);
    }
  }

  async function start() {
    if (window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches) state.theme = 'dark';
    changeHostContext({ theme: state.theme });
    try {
      var response = await fetch('/preview/mounts.json', { headers: { Accept: 'application/json' } });
      var listed = await response.json();
      state.mounts = listed.mounts || [];
      state.authorizationServer = listed.authorization_server || null;
    } catch (e) {
      setConnection('error', 'cannot list the mounts: ' + e.message);
      return;
    }
    state.mounts.forEach(function (m, i) {
      var label = m.app ? 'app ' + m.name + ' of ' + m.app.join(', ') : m.name;
      ui.mount.appendChild(el('option', { value: String(i), text: label + ' (' + m.path + ')' }));
    });
    ui.mount.addEventListener('change', function () { connect(state.mounts[Number(ui.mount.value)]); });
    // Back from signing in: the mount signed in for, or why it failed.
    var back = null;
    if (location.pathname === CALLBACK_PATH) {
      setConnection('connecting', 'signing in…');
      back = await finishSignIn();
    }
    var first = back && back.mount ? back.mount : state.mounts[0];
    if (back && back.error && !back.mount) {
      // No endpoint to say it beside (this tab started no sign-in).
      log('error', 'host', 'sign-in', back.error);
      side('error', 'Sign-in', el('pre', { text: back.error }));
      back = null;
    }
    if (first) {
      ui.mount.value = String(state.mounts.indexOf(first));
      await connect(first, { error: back && back.error });
    } else {
      setConnection('error', back && back.error ? back.error : 'no mounts');
    }
  }

  window.addEventListener('pagehide', function () { if (state.mcp) state.mcp.close(); });
  start();
})();
