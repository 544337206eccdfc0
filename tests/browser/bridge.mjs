#!/usr/bin/env node
// The window.openai bridge (crates/overlay/src/overlay/widget/openai_bridge.js)
// against a hostile host answer, a huge widget state and state planted by
// another document of the frame's origin, in headless Chromium. A small host
// page (origin A) mounts a widget document holding the bridge script (origin B),
// answers its ui/* requests and records what it posts; a second document of
// origin B plays the other document of the same origin. Prints a JSON summary.
//
//   node tests/browser/bridge.mjs [--case proto|state-size|planted|foreign|tool-input|styles|all] [--timeout SECONDS]
//
// proto: tools/call answered with a result whose "__proto__" key holds
//   {"isError": true, …}; what window.openai.callTool resolves with.
// state-size: setWidgetState of a small state, then of 12 MB; what the host
//   received, what the promise did, widgetState, and the console.
// planted: storage of origin B written by another document (under the key an
//   earlier bridge used, and under any key holding state of another widget or
//   call), then the widget mounted for a call; then its own state across a
//   remount, and the same call id with another widget, another call id.
// foreign: another frame of the host page (another origin) posts the widget a
//   tool result, a theme change and answers to every request id while the
//   widget's callTool waits for the host; what the widget then holds.
// tool-input: window.openai.toolInput before the host's
//   ui/notifications/tool-input (ChatGPT sends it once the user approved the
//   call), then after it, and the openai:set_globals events the widget heard.
// styles: the host's hostContext.styles.variables, in ui/initialize's answer
//   and in a ui/notifications/host-context-changed, as the computed style of
//   the widget's document root; and what window.openai then holds.
//
// Exit status: 0 when the run completed (the checks are the caller's, on the
// summary), 1 when it could not, 2 on bad usage or a missing peer. Only
// 127.0.0.1 is used; the servers and Chromium started here are stopped before exit.

import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const BRIDGE = join(ROOT, 'crates/overlay/src/overlay/widget/openai_bridge.js');
const started = Date.now();

function usage(message) {
  process.stderr.write(`bridge.mjs: ${message}\nusage: node tests/browser/bridge.mjs [--case proto|state-size|planted|foreign|tool-input|styles|all] [--timeout SECONDS]\n`);
  process.exit(2);
}
const opts = { case: 'all', timeout: 60 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = { '--case': 'case', '--timeout': 'timeout' }[argv[i]];
  if (!key || i + 1 >= argv.length) usage(`unknown argument or missing value: ${argv[i]}`);
  opts[key] = argv[i + 1];
}
const CASES = ['proto', 'state-size', 'planted', 'foreign', 'tool-input', 'styles'];
if (opts.case !== 'all' && !CASES.includes(opts.case)) usage(`--case: ${opts.case}`);
opts.timeout = Number(opts.timeout);
if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) usage('--timeout must be a positive number');

const peerRequire = createRequire(join(ROOT, 'tests/peers/package.json'));
let chromium;
try {
  process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
  ({ chromium } = peerRequire('playwright-core'));
} catch (e) {
  usage(`cannot load playwright-core from tests/peers/node_modules (${e.code ?? e.message}); run bash scripts/install-peers.sh`);
}
let chromiumPath = process.env.CHROMIUM;
if (!chromiumPath) {
  try {
    chromiumPath = execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    usage('chromium not found on PATH; run bash scripts/install-peers.sh');
  }
}

const summary = { ok: false, reason: null, cases: {}, console: [], timings_ms: {} };
const cleanups = [];
let finished = false;
async function finish(ok, reason) {
  if (finished) return;
  finished = true;
  summary.ok = ok;
  summary.reason = reason ?? null;
  summary.timings_ms.total = Date.now() - started;
  for (const undo of cleanups.reverse()) await Promise.resolve().then(undo).catch(() => {});
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  if (!ok) process.stderr.write(`bridge.mjs: FAILED: ${reason}\n`);
  process.exit(ok ? 0 : 1);
}
setTimeout(() => void finish(false, `timed out after ${opts.timeout} s`), opts.timeout * 1000).unref();
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void finish(false, `interrupted by ${sig}`));

// ---------------------------------------------------------------- the pages

// The host: mounts the widget, answers ui/initialize with the tool call
// (?call, ?uri), tools/call with the JSON text of ?result parsed, anything
// else with {}; records each message's method and size.
const HOST_PAGE = `<!doctype html><meta charset=utf-8><title>bridge host</title><body><script>
var q = new URLSearchParams(location.search);
var host = window.__host = { received: [], initialized: false };
var frame = document.createElement('iframe');
if (q.get('sandbox') !== null) frame.sandbox = q.get('sandbox');
frame.style.cssText = 'width:600px;height:300px';
document.body.appendChild(frame);
window.addEventListener('message', function (ev) {
  if (ev.source !== frame.contentWindow) return;
  var m = ev.data;
  if (!m || m.jsonrpc !== '2.0') return;
  var text = JSON.stringify(m.params || {});
  host.received.push({ method: m.method, chars: text.length });
  if (m.method === 'ui/notifications/initialized') host.initialized = true;
  if (m.id === undefined) return;
  var result = {};
  if (m.method === 'ui/initialize') {
    result = { protocolVersion: '2026-01-26', hostInfo: { name: 'bridge-test', version: '1' }, hostCapabilities: {},
      hostContext: { theme: 'light', toolInfo: { id: JSON.parse(q.get('call')),
        tool: { name: 'show', _meta: { ui: { resourceUri: q.get('uri') } } } } } };
    if (q.get('styles')) result.hostContext.styles = { variables: JSON.parse(q.get('styles')) };
  } else if (m.method === 'tools/call') result = JSON.parse(q.get('result'));
  var answer = function () { frame.contentWindow.postMessage({ jsonrpc: '2.0', id: m.id, result: result }, '*'); };
  if (m.method === 'tools/call' && q.get('delay')) setTimeout(answer, Number(q.get('delay'))); else answer();
});
frame.src = q.get('widget');
// What only the host says: a notification posted to the widget.
window.__notify = function (method, params) {
  frame.contentWindow.postMessage({ jsonrpc: '2.0', method: method, params: params }, '*');
};
</script>`;

const BRIDGE_JS = readFileSync(BRIDGE, 'utf8');
// The events window.openai's globals changed by, as the Apps SDK's hooks hear them.
const WIDGET_PAGE = `<!doctype html><html><head><meta charset=utf-8><script>${BRIDGE_JS}</script><script>
window.__globals = [];
window.addEventListener('openai:set_globals', function (e) { window.__globals.push(JSON.parse(JSON.stringify(e.detail.globals))); });
</script></head><body><p>widget</p></body></html>`;
// Another document of the widget's origin: writes what ?plant holds (key → text).
const PLANT_PAGE = `<!doctype html><meta charset=utf-8><script>
var plant = JSON.parse(new URLSearchParams(location.search).get('plant'));
Object.keys(plant).forEach(function (k) { localStorage.setItem(k, plant[k]); });
window.__planted = Object.keys(plant).length;
</script>`;

// Another frame of the host page: posts the widget (the host page's first
// frame) what only its host may say, as if it were the host.
const FOREIGN_PAGE = `<!doctype html><meta charset=utf-8><script>
var widget = parent.frames[0];
widget.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/tool-result',
  params: { structuredContent: { forged: true }, content: [] } }, '*');
widget.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed',
  params: { theme: 'forged' } }, '*');
for (var id = 0; id < 64; id++) {
  widget.postMessage({ jsonrpc: '2.0', id: id, result: { structuredContent: { forged: true }, content: [] } }, '*');
  widget.postMessage({ jsonrpc: '2.0', id: String(id), result: { structuredContent: { forged: true }, content: [] } }, '*');
}
window.__posted = true;
</script>`;

function serve(pages) {
  const server = http.createServer((req, res) => {
    const body = pages[new URL(req.url, 'http://x').pathname];
    if (body === undefined) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(body);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      cleanups.push(() => new Promise((done) => server.close(() => done())));
      ok(`http://127.0.0.1:${server.address().port}`);
    });
  });
}

// ---------------------------------------------------------------- the run

async function main() {
  const hostOrigin = await serve({ '/': HOST_PAGE });
  const foreignOrigin = await serve({ '/foreign.html': FOREIGN_PAGE });
  const widgetOrigin = await serve({ '/widget.html': WIDGET_PAGE, '/plant.html': PLANT_PAGE });
  const home = mkdtempSync(join(tmpdir(), 'mcp-bridge-home-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  let t = Date.now();
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    env: { ...process.env, HOME: home },
    timeout: 30000,
  });
  cleanups.push(() => Promise.race([browser.close(), new Promise((r) => setTimeout(r, 5000))]));
  summary.timings_ms.launch = Date.now() - t;
  const context = await browser.newContext();
  await context.route('**/*', (route) => (new URL(route.request().url()).hostname === '127.0.0.1'
    ? route.continue() : route.abort()));
  const page = await context.newPage();
  page.on('console', (m) => {
    if (summary.console.length < 200) summary.console.push({ type: m.type(), text: m.text().slice(0, 500) });
  });
  page.on('pageerror', (e) => summary.console.push({ type: 'pageerror', text: String(e.message).slice(0, 500) }));

  // The widget mounted for `call` of the widget `uri`, initialised; its frame.
  // `sandbox`: the frame's sandbox attribute (none by default).
  const mount = async ({ call = 7, uri = 'ui://board/v1.html', result = {}, sandbox, delay, styles } = {}) => {
    const q = new URLSearchParams({ call: JSON.stringify(call), uri, widget: `${widgetOrigin}/widget.html`,
      result: typeof result === 'string' ? result : JSON.stringify(result) });
    if (styles !== undefined) q.set('styles', JSON.stringify(styles));
    if (sandbox !== undefined) q.set('sandbox', sandbox);
    if (delay !== undefined) q.set('delay', String(delay));
    await page.goto(`${hostOrigin}/?${q}`, { waitUntil: 'load', timeout: 20000 });
    await page.waitForFunction(() => window.__host && window.__host.initialized, null, { timeout: 15000, polling: 50 });
    const frame = page.frames().find((f) => f.url().startsWith(`${widgetOrigin}/widget.html`));
    if (!frame) throw new Error('the widget frame is not there');
    return frame;
  };
  const received = () => page.evaluate(() => window.__host.received);

  const cases = opts.case === 'all' ? CASES : [opts.case];
  if (cases.includes('proto')) {
    // As the host's JSON parser leaves it: "__proto__" an own key of the result.
    const result = '{"content":[{"type":"text","text":"fine"}],"structuredContent":{"n":1},'
      + '"__proto__":{"isError":true,"polluted":"yes"}}';
    const frame = await mount({ result });
    summary.cases.proto = await frame.evaluate(async () => {
      const r = await window.openai.callTool('anything', {});
      return {
        isError: r.isError === undefined ? null : r.isError,
        polluted: r.polluted === undefined ? null : r.polluted,
        prototype_is_object: Object.getPrototypeOf(r) === Object.prototype,
        own_proto_key: Object.prototype.hasOwnProperty.call(r, '__proto__'),
        result: r.result,
        structured: r.structuredContent,
        global_polluted: ({}).polluted === undefined ? null : ({}).polluted,
      };
    });
  }

  if (cases.includes('state-size')) {
    const frame = await mount();
    const before = (await received()).length;
    summary.cases['state-size'] = await frame.evaluate(async () => {
      const settle = (p) => Promise.resolve(p).then(() => 'resolved', (e) => 'rejected: ' + (e && e.message));
      const small = await settle(window.openai.setWidgetState({ selected: 2 }));
      const big = { blob: 'x'.repeat(12 * 1024 * 1024) };
      let big_outcome;
      try {
        big_outcome = await settle(window.openai.setWidgetState(big));
      } catch (e) {
        big_outcome = 'thrown: ' + e.message;
      }
      const state = window.openai.widgetState;
      return {
        small,
        big: big_outcome,
        widget_state_after: state && state.blob ? { blob_chars: state.blob.length } : state,
      };
    });
    await page.waitForTimeout(300);
    const posts = (await received()).slice(before).filter((m) => m.method === 'ui/update-model-context');
    summary.cases['state-size'].posted_chars = posts.map((m) => m.chars);
    summary.cases['state-size'].warnings = summary.console
      .filter((m) => m.type === 'warning' || m.type === 'error').map((m) => m.text);
    // States just under the limit for six calls, more than the origin's
    // storage holds together: the latest is still there on its remount.
    const near = 1000 * 1000;
    for (let call = 101; call <= 106; call++) {
      const f = await mount({ call });
      await f.evaluate((n) => window.openai.setWidgetState({ blob: 'y'.repeat(n) }), near);
    }
    summary.cases['state-size'].remount_after_six_near_limit = await (await mount({ call: 106 }))
      .evaluate(() => { const s = window.openai.widgetState; return s && s.blob ? s.blob.length : s; });
    // A frame without storage (an opaque origin): the state is still the
    // widget's and the host's, quietly.
    const warned = summary.console.length;
    const opaque = await mount({ call: 107, sandbox: 'allow-scripts' });
    summary.cases['state-size'].without_storage = await opaque.evaluate(async () => ({
      outcome: await window.openai.setWidgetState({ selected: 3 }).then(() => 'resolved', (e) => 'rejected: ' + e.message),
      widget_state: window.openai.widgetState,
    }));
    summary.cases['state-size'].without_storage.console = summary.console.slice(warned).map((m) => m.text);
  }

  if (cases.includes('planted')) {
    const uri = 'ui://board/v1.html';
    const stateOf = (frame) => frame.evaluate(() => window.openai.widgetState);
    const out = summary.cases.planted = {};
    // Another document of the origin plants state for call 7: under the key an
    // earlier bridge kept it, and under keys naming the call and this widget
    // with a record of another widget or call inside.
    const planted = {
      'openai-widget-state:7': '{"planted":"by call id"}',
      [`openai-widget-state:${JSON.stringify([uri, 7])}`]:
        JSON.stringify({ widget: 'ui://other/v1.html', call: 7, state: { planted: 'other widget inside' } }),
    };
    const plant = await context.newPage();
    await plant.goto(`${widgetOrigin}/plant.html?${new URLSearchParams({ plant: JSON.stringify(planted) })}`,
      { waitUntil: 'load', timeout: 10000 });
    out.planted_keys = await plant.evaluate(() => window.__planted);
    await plant.close();
    out.mounted_with_planted = await stateOf(await mount({ call: 7, uri }));

    // Its own state comes back on a remount of the same call and widget…
    const frame = await mount({ call: 8, uri });
    await frame.evaluate(() => window.openai.setWidgetState({ selected: 'own' }));
    out.remount_same = await stateOf(await mount({ call: 8, uri }));
    // …and not to another widget mounted for a call of the same id, nor to
    // the same widget for another call.
    out.other_widget_same_call = await stateOf(await mount({ call: 8, uri: 'ui://other/v1.html' }));
    out.same_widget_other_call = await stateOf(await mount({ call: 9, uri }));
    // What the origin's storage holds now, as another document sees it.
    const look = await context.newPage();
    await look.goto(`${widgetOrigin}/plant.html?${new URLSearchParams({ plant: '{}' })}`, { waitUntil: 'load', timeout: 10000 });
    out.storage_keys = await look.evaluate(() => Object.keys(localStorage));
    await look.close();
  }

  if (cases.includes('foreign')) {
    const frame = await mount({ result: { structuredContent: { genuine: true }, content: [] }, delay: 1500 });
    await frame.evaluate(() => {
      window.__call = window.openai.callTool('show', {}).then((r) => r, (e) => ({ failed: String(e) }));
    });
    // Another frame of the host page, once the widget's call waits.
    await page.evaluate((src) => new Promise((done) => {
      const f = document.createElement('iframe');
      f.onload = () => done();
      f.src = src;
      document.body.appendChild(f);
    }), `${foreignOrigin}/foreign.html`);
    await page.waitForTimeout(200);
    const during = await frame.evaluate(() => ({ toolOutput: window.openai.toolOutput ?? null, theme: window.openai.theme ?? null }));
    const result = await frame.evaluate(() => window.__call);
    const after = await frame.evaluate(() => ({ toolOutput: window.openai.toolOutput ?? null, theme: window.openai.theme ?? null }));
    summary.cases.foreign = { during, result, after, foreign_frames: page.frames().filter((f) => f.url().startsWith(foreignOrigin)).length };
  }
  await moreCases(cases, mount);
}

async function moreCases(cases, mount) {
  if (cases.includes('tool-input')) {
    const frame = await mount();
    const out = summary.cases['tool-input'] = {};
    out.before = await frame.evaluate(() => window.openai.toolInput);
    out.events_before = await frame.evaluate(() => window.__globals.filter((g) => 'toolInput' in g).length);
    await frame.page().evaluate(() => window.__notify('ui/notifications/tool-input', { arguments: { city: 'Lyon', days: 3 } }));
    await frame.waitForFunction(() => window.openai.toolInput && window.openai.toolInput.city, null, { timeout: 5000, polling: 50 });
    out.after = await frame.evaluate(() => window.openai.toolInput);
    out.events = await frame.evaluate(() => window.__globals.filter((g) => 'toolInput' in g));
  }
  if (cases.includes('styles')) {
    const frame = await mount({ styles: { '--color-background-primary': 'rgb(1, 2, 3)', 'not-a-variable': 'red' } });
    const root = () => frame.evaluate(() => ({
      background: getComputedStyle(document.documentElement).getPropertyValue('--color-background-primary').trim(),
      text: getComputedStyle(document.documentElement).getPropertyValue('--color-text-primary').trim(),
      inline: document.documentElement.getAttribute('style'),
    }));
    const out = summary.cases.styles = { initialized: await root() };
    await frame.page().evaluate(() => window.__notify('ui/notifications/host-context-changed',
      { theme: 'dark', styles: { variables: { '--color-text-primary': 'rgb(4, 5, 6)' } } }));
    await frame.waitForFunction(() => window.openai.theme === 'dark', null, { timeout: 5000, polling: 50 });
    out.changed = await root();
    out.openai_keys = await frame.evaluate(() => Object.keys(window.openai).filter((k) => /style|variable|css/i.test(k)));
  }
}

main().then(() => finish(true), (e) => finish(false, e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : String(e)));
