// Task board: the view of the bundled demo (a task list), written against the MCP Apps
// bridge by hand: JSON-RPC 2.0 over window.parent.postMessage, no SDK and no build step.
//
//   view -> host   ui/initialize (request), ui/notifications/initialized,
//                  ui/notifications/size-changed, tools/call (request)
//   host -> view   ui/notifications/tool-input, ui/notifications/tool-result,
//                  ui/notifications/tool-cancelled, ui/notifications/host-context-changed,
//                  ui/resource-teardown (request), ping (request)
//
// Tool results are read from structuredContent when the host (or the gateway) provides
// it, else from the JSON held by the first text content item (the demo server is a
// legacy server and only sends text). In ChatGPT, window.openai is used as well:
// toolOutput for the first render, openai:set_globals for updates and callTool for calls.
(function () {
  'use strict';

  // Works wherever the script ends up (end of <body> as shipped, or <head>).
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', boot, { once: true });
  } else {
    boot();
  }

  function boot() {
    var PROTOCOL_VERSION = '2026-01-26';
    var APP_INFO = { name: 'task-board', version: '0.1.0' };
    var INIT_TIMEOUT_MS = 15000;
    var CALL_TIMEOUT_MS = 30000;

    var el = {
      main: document.getElementById('task-board'),
      list: document.getElementById('task-list'),
      empty: document.getElementById('empty'),
      summary: document.getElementById('summary'),
      status: document.getElementById('status'),
      form: document.getElementById('add-form'),
      input: document.getElementById('new-title'),
      addButton: document.getElementById('add-button'),
      refreshButton: document.getElementById('refresh-button'),
    };

    var state = {
      tasks: [],
      loaded: false,
      toolInput: null,
      hostInfo: null,
      hostCapabilities: null,
      hostContext: {},
      bridge: 'connecting', // connecting | ready | unavailable
      inFlight: {}, // task id (string) -> true while its complete_task call runs
      lastResult: null,
    };
    // For tests and debugging only.
    window.__taskBoard = state;

    // ------------------------------------------------------------------ rendering

    function setStatus(text, kind) {
      el.status.textContent = text;
      el.status.setAttribute('data-state', kind || 'idle');
    }

    function setPageState(value) {
      document.body.setAttribute('data-state', value);
      el.main.setAttribute('aria-busy', value === 'loading' ? 'true' : 'false');
    }

    function render() {
      var list = el.list;
      var focused = document.activeElement;
      var focusedId = focused && focused.closest && focused.closest('[data-task-id]')
        ? focused.closest('[data-task-id]').getAttribute('data-task-id') : null;
      while (list.firstChild) list.removeChild(list.firstChild);

      var open = 0;
      state.tasks.forEach(function (task) {
        var key = String(task.id);
        var li = document.createElement('li');
        li.className = 'task';
        li.id = 'task-' + key;
        li.setAttribute('data-task-id', key);
        li.setAttribute('data-done', task.done ? 'true' : 'false');
        li.tabIndex = -1;

        var check = document.createElement('span');
        check.className = 'task-check';
        check.setAttribute('aria-hidden', 'true');
        li.appendChild(check);

        var title = document.createElement('span');
        title.className = 'task-title';
        title.textContent = task.title;
        li.appendChild(title);

        if (task.done) {
          var badge = document.createElement('span');
          badge.className = 'task-badge';
          badge.textContent = 'Completed';
          li.appendChild(badge);
        } else {
          open += 1;
          var button = document.createElement('button');
          button.type = 'button';
          button.className = 'done-button';
          button.setAttribute('data-action', 'complete');
          button.setAttribute('data-task-id', key);
          button.setAttribute('aria-label', 'Mark \u201c' + task.title + '\u201d as done');
          button.textContent = 'Done';
          if (state.inFlight[key]) button.disabled = true;
          li.appendChild(button);
        }
        list.appendChild(li);
      });

      el.empty.hidden = !state.loaded || state.tasks.length > 0;
      var done = state.tasks.length - open;
      el.summary.textContent = state.loaded ? open + ' open \u00b7 ' + done + ' done' : '';
      if (focusedId !== null) {
        var again = list.querySelector('[data-task-id="' + cssEscape(focusedId) + '"]');
        if (again) (again.querySelector('button') || again).focus();
      }
    }

    function cssEscape(value) {
      return window.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, '\\$&');
    }

    // ------------------------------------------------------------ tool results

    function normalizeTask(value) {
      if (!value || typeof value !== 'object') return null;
      if (typeof value.id !== 'number' && typeof value.id !== 'string') return null;
      if (typeof value.title !== 'string') return null;
      return { id: value.id, title: value.title, done: value.done === true };
    }

    function firstText(result) {
      var content = Array.isArray(result && result.content) ? result.content : [];
      for (var i = 0; i < content.length; i++) {
        if (content[i] && content[i].type === 'text' && typeof content[i].text === 'string') {
          return content[i].text;
        }
      }
      return undefined;
    }

    // Data (structuredContent, parsed text, or window.openai.toolOutput) -> {tasks} | {task} | {error}.
    function interpretData(data) {
      if (Array.isArray(data)) data = { tasks: data };
      if (data && typeof data === 'object') {
        if (Array.isArray(data.tasks)) {
          return { tasks: data.tasks.map(normalizeTask).filter(Boolean) };
        }
        var task = normalizeTask(data.task || data);
        if (task) return { task: task };
      }
      return { error: 'The tool result holds no tasks.' };
    }

    // A CallToolResult (or what window.openai.callTool resolves to) -> {tasks} | {task} | {error}.
    function interpretResult(result) {
      if (!result || typeof result !== 'object') return { error: 'The host returned no result.' };
      if (result.isError) {
        return { error: firstText(result) || 'The tool reported an error.' };
      }
      if (result.structuredContent !== undefined && result.structuredContent !== null) {
        return interpretData(result.structuredContent);
      }
      var text = firstText(result);
      if (text !== undefined) {
        try {
          return interpretData(JSON.parse(text));
        } catch (e) {
          return { error: 'Unexpected tool output: ' + text.slice(0, 200) };
        }
      }
      // Bare data (window.openai wrappers that already unwrapped the structured content).
      return interpretData(result);
    }

    function mergeTask(task) {
      var key = String(task.id);
      for (var i = 0; i < state.tasks.length; i++) {
        if (String(state.tasks[i].id) === key) {
          state.tasks[i] = task;
          return;
        }
      }
      state.tasks.push(task);
    }

    // Applies an interpreted result; returns it.
    function apply(parsed) {
      if (parsed.error) {
        setStatus(parsed.error, 'error');
        if (!state.loaded) setPageState('error');
        return parsed;
      }
      if (parsed.tasks) state.tasks = parsed.tasks;
      if (parsed.task) mergeTask(parsed.task);
      state.loaded = true;
      setPageState('ready');
      render();
      return parsed;
    }

    function onInitialResult(result) {
      state.lastResult = result;
      var parsed = apply(interpretResult(result));
      if (parsed.error) return;
      if (parsed.task) {
        // The model called add_task or complete_task: show the whole board around it.
        setStatus('Loading the whole list\u2026', 'loading');
        refresh().then(function () {
          setStatus(describe(parsed.task), 'ok');
        }, reportError);
      } else {
        setStatus(countText(), 'ok');
      }
    }

    function countText() {
      return state.tasks.length === 1 ? '1 task.' : state.tasks.length + ' tasks.';
    }

    function describe(task) {
      return (task.done ? 'Completed \u201c' : 'Added \u201c') + task.title + '\u201d.';
    }

    function reportError(err) {
      setStatus(err && err.message ? err.message : String(err), 'error');
    }

    // ------------------------------------------------------------ the bridge

    var embedded = window.parent && window.parent !== window;
    var nextId = 1;
    var pending = {};
    var readyResolve;
    var ready = new Promise(function (resolve) { readyResolve = resolve; });

    function post(message) {
      window.parent.postMessage(message, '*');
    }

    function request(method, params, timeoutMs) {
      var id = nextId++;
      return new Promise(function (resolve, reject) {
        var timer = setTimeout(function () {
          delete pending[id];
          reject(new Error(method + ': no answer from the host within ' + timeoutMs / 1000 + ' s'));
        }, timeoutMs);
        pending[id] = { resolve: resolve, reject: reject, timer: timer };
        post({ jsonrpc: '2.0', id: id, method: method, params: params || {} });
      });
    }

    function notify(method, params) {
      post({ jsonrpc: '2.0', method: method, params: params || {} });
    }

    function respond(id, result) {
      post({ jsonrpc: '2.0', id: id, result: result });
    }

    function respondError(id, code, message) {
      post({ jsonrpc: '2.0', id: id, error: { code: code, message: message } });
    }

    function onMessage(event) {
      if (event.source !== window.parent) return;
      var msg = event.data;
      if (!msg || typeof msg !== 'object' || msg.jsonrpc !== '2.0') return;
      if (typeof msg.method === 'string') {
        if (msg.id !== undefined && msg.id !== null) onRequest(msg);
        else onNotification(msg.method, msg.params || {});
        return;
      }
      var waiter = pending[msg.id];
      if (!waiter) return;
      delete pending[msg.id];
      clearTimeout(waiter.timer);
      if (msg.error) {
        var err = new Error(msg.error.message || 'JSON-RPC error ' + msg.error.code);
        err.code = msg.error.code;
        err.data = msg.error.data;
        waiter.reject(err);
      } else {
        waiter.resolve(msg.result);
      }
    }

    function onRequest(msg) {
      switch (msg.method) {
        case 'ui/resource-teardown':
          setStatus('Closing\u2026', 'idle');
          respond(msg.id, {});
          break;
        case 'ping':
          respond(msg.id, {});
          break;
        default:
          respondError(msg.id, -32601, 'Method not found: ' + msg.method);
      }
    }

    function onNotification(method, params) {
      switch (method) {
        case 'ui/notifications/tool-input':
          state.toolInput = params.arguments || {};
          if (!state.loaded) setStatus('Waiting for the tool result\u2026', 'loading');
          break;
        case 'ui/notifications/tool-input-partial':
          break;
        case 'ui/notifications/tool-result':
          onInitialResult(params);
          break;
        case 'ui/notifications/tool-cancelled':
          setStatus('The tool call was cancelled' + (params.reason ? ': ' + params.reason : '.'), 'error');
          if (!state.loaded) setPageState('error');
          break;
        case 'ui/notifications/host-context-changed':
          mergeHostContext(params);
          break;
        default:
          break; // unknown notifications are ignored, as JSON-RPC requires
      }
    }

    // ------------------------------------------------------------ host context / theme

    function mergeHostContext(partial) {
      if (!partial || typeof partial !== 'object') return;
      Object.keys(partial).forEach(function (key) { state.hostContext[key] = partial[key]; });
      if (partial.theme) setTheme(partial.theme);
      if (partial.styles) applyStyles(partial.styles);
    }

    function setTheme(theme) {
      document.documentElement.setAttribute('data-theme', theme === 'dark' ? 'dark' : 'light');
    }

    function applyStyles(styles) {
      var vars = styles && styles.variables;
      if (vars && typeof vars === 'object') {
        Object.keys(vars).forEach(function (name) {
          if (name.indexOf('--') === 0 && typeof vars[name] === 'string') {
            document.documentElement.style.setProperty(name, vars[name]);
          }
        });
      }
      var fonts = styles && styles.css && styles.css.fonts;
      if (typeof fonts === 'string') {
        var tag = document.getElementById('host-fonts');
        if (!tag) {
          tag = document.createElement('style');
          tag.id = 'host-fonts';
          document.head.appendChild(tag);
        }
        tag.textContent = fonts;
      }
    }

    // Until the host says otherwise, follow the system preference.
    if (window.matchMedia) {
      setTheme(window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
    }

    // ------------------------------------------------------------ size reporting

    function startSizeReporting() {
      var last = '';
      var scheduled = false;
      function measure() {
        scheduled = false;
        var rect = document.documentElement.getBoundingClientRect();
        var size = { width: Math.ceil(rect.width), height: Math.ceil(rect.height) };
        var key = size.width + 'x' + size.height;
        if (key === last) return;
        last = key;
        if (state.bridge === 'ready') notify('ui/notifications/size-changed', size);
        var oa = openai();
        if (oa && typeof oa.notifyIntrinsicHeight === 'function') {
          try { oa.notifyIntrinsicHeight(size.height); } catch (e) { /* optional API */ }
        }
      }
      function schedule() {
        if (scheduled) return;
        scheduled = true;
        requestAnimationFrame(measure);
      }
      if (typeof ResizeObserver === 'function') {
        var observer = new ResizeObserver(schedule);
        observer.observe(document.documentElement);
        observer.observe(document.body);
      } else {
        window.addEventListener('resize', schedule);
      }
      schedule();
    }

    // ------------------------------------------------------------ window.openai (ChatGPT)

    function openai() {
      return window.openai && typeof window.openai === 'object' ? window.openai : null;
    }

    function applyOpenAiGlobals(globals) {
      if (!globals) return;
      if (globals.theme) setTheme(globals.theme);
      if (globals.toolOutput !== undefined && globals.toolOutput !== null) {
        var parsed = apply(interpretData(globals.toolOutput));
        if (!parsed.error) setStatus(countText(), 'ok');
      }
    }

    window.addEventListener('openai:set_globals', function (event) {
      applyOpenAiGlobals(event && event.detail && event.detail.globals);
    });

    // ------------------------------------------------------------ tool calls

    function callTool(name, args) {
      var oa = openai();
      if (oa && typeof oa.callTool === 'function') {
        return Promise.resolve(oa.callTool(name, args));
      }
      return ready.then(function (ok) {
        if (!ok) throw new Error('No connection to the host: cannot call ' + name + '.');
        return request('tools/call', { name: name, arguments: args }, CALL_TIMEOUT_MS);
      });
    }

    // The app-only helper (visibility ["app"]): the model never sees it, and
    // the board updates in place instead of being rendered again.
    function refresh() {
      return callTool('refresh_tasks', {}).then(function (result) {
        var parsed = apply(interpretResult(result));
        if (parsed.error) throw new Error(parsed.error);
        return parsed;
      });
    }

    el.list.addEventListener('click', function (event) {
      var button = event.target.closest('button[data-action="complete"]');
      if (!button || button.disabled) return;
      var key = button.getAttribute('data-task-id');
      var task = state.tasks.filter(function (t) { return String(t.id) === key; })[0];
      if (!task) return;
      state.inFlight[key] = true;
      button.disabled = true;
      setStatus('Completing \u201c' + task.title + '\u201d\u2026', 'loading');
      callTool('complete_task', { id: task.id }).then(function (result) {
        delete state.inFlight[key];
        var parsed = apply(interpretResult(result));
        if (parsed.error) { render(); return; }
        var updated = parsed.task || task;
        setStatus('Completed \u201c' + updated.title + '\u201d.', 'ok');
        var li = document.getElementById('task-' + key);
        if (li) li.focus();
      }, function (err) {
        delete state.inFlight[key];
        render();
        reportError(err);
      });
    });

    el.refreshButton.addEventListener('click', function () {
      el.refreshButton.disabled = true;
      setStatus('Refreshing\u2026', 'loading');
      refresh().then(function () {
        setStatus('Refreshed: ' + countText(), 'ok');
      }, reportError).then(function () {
        el.refreshButton.disabled = false;
      });
    });

    el.form.addEventListener('submit', function (event) {
      event.preventDefault();
      var title = el.input.value.trim();
      if (!title) {
        setStatus('Type a title first.', 'error');
        el.input.focus();
        return;
      }
      el.addButton.disabled = true;
      el.input.disabled = true;
      setStatus('Adding \u201c' + title + '\u201d\u2026', 'loading');
      callTool('add_task', { title: title }).then(function (result) {
        var parsed = interpretResult(result);
        if (parsed.error) throw new Error(parsed.error);
        if (parsed.task) mergeTask(parsed.task);
        return refresh();
      }).then(function () {
        el.input.value = '';
        setStatus('Added \u201c' + title + '\u201d.', 'ok');
      }, reportError).then(function () {
        el.addButton.disabled = false;
        el.input.disabled = false;
        el.input.focus();
      });
    });

    // ------------------------------------------------------------ start

    window.addEventListener('message', onMessage);
    render();

    var oa = openai();
    if (oa) applyOpenAiGlobals({ theme: oa.theme, toolOutput: oa.toolOutput });

    if (!embedded) {
      state.bridge = 'unavailable';
      readyResolve(false);
      if (!state.loaded) {
        setStatus('Not running inside an MCP Apps host.', 'error');
        setPageState('error');
      }
      return;
    }

    request('ui/initialize', {
      appInfo: APP_INFO,
      appCapabilities: { availableDisplayModes: ['inline'] },
      protocolVersion: PROTOCOL_VERSION,
    }, INIT_TIMEOUT_MS).then(function (result) {
      result = result || {};
      state.hostInfo = result.hostInfo || null;
      state.hostCapabilities = result.hostCapabilities || {};
      mergeHostContext(result.hostContext);
      state.bridge = 'ready';
      notify('ui/notifications/initialized', {});
      readyResolve(true);
      startSizeReporting();
      if (!state.loaded) setStatus('Waiting for the tool result\u2026', 'loading');
    }, function (err) {
      state.bridge = 'unavailable';
      readyResolve(false);
      if (openai()) {
        startSizeReporting();
      } else {
        setStatus('The host did not complete ui/initialize: ' + err.message, 'error');
        setPageState('error');
      }
    });
  }
})();
