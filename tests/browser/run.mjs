#!/usr/bin/env node
// Browser driver for the MCP Apps tests: renders a tool's View in a real host
// (tests/browser/host, the official AppBridge) inside headless Chromium, optionally
// clicks inside the View, takes a screenshot and prints a JSON summary.
//
//   node tests/browser/run.mjs --mcp URL --tool NAME [--data-tool NAME] [--args JSON|@FILE]
//        [--click SELECTOR] [--expect TEXT] [--expect-call[-text]] --screenshot FILE
//   node tests/browser/run.mjs --html FILE --tool-result JSON|@FILE [--mcp URL] [--tool NAME]
//        [--args JSON|@FILE] [--fill SELECTOR --value TEXT] [--click SELECTOR] [--expect TEXT] --screenshot FILE
//
// --args JSON|@FILE: the tool's arguments (from FILE, of any size, with @).
// --data-tool NAME calls NAME first (with --args) and passes its structuredContent to
// --tool as arguments: the decoupled data/render pattern.
// --fill SELECTOR --value TEXT types TEXT into a field of the View before the click.
// --count SELECTOR reports how many elements of the View match, once it has rendered.
// --then-click SELECTOR clicks a second time once the first click is done (a confirmation).
// --expect TEXT waits until TEXT is in the View's text (after the click, if any).
// --expect-call (with --click) waits until the click made the View call a tool through
// the host and that call succeeded (a result, not isError); --expect-call-text also
// wants the first text content of that result to show in the View.
// --switch-theme light|dark sends ui/notifications/host-context-changed {theme} once the
// View has rendered (before any click).
// --frame-height PX: the View's frame is this tall until the View reports its height.
// --remount TEXT: at the end, the host page is loaded again with the same tool call id
// (hostContext.toolInfo.id): the same call's View mounted anew, which must show TEXT.
// Other options: --theme light|dark, --timeout SECONDS (whole run, default 90),
// --direct (the page talks to --mcp itself, which then needs CORS; by default the
// driver's own server proxies /mcp to it), --keep (keep the temp dir), --quiet.
//
// Exit status: 0 on success, 1 on failure (reason on stderr, and "ok": false in the
// summary on stdout), 2 on bad usage or a missing peer. Only 127.0.0.1 is used;
// everything started here (two HTTP servers, one Chromium) is stopped before exit.
// Nothing here downloads a browser: Chromium is Debian's (`command -v chromium`).

import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, mkdirSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, relative, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const PEERS = join(ROOT, 'tests', 'peers');
const HOST_DIR = join(HERE, 'host');
const started = Date.now();

// ---------------------------------------------------------------- arguments

const USAGE = `usage: node tests/browser/run.mjs (--mcp URL --tool NAME [--data-tool NAME] | --html FILE --tool-result JSON|@FILE [--mcp URL] [--tool NAME])
       [--args JSON|@FILE] [--fill SELECTOR --value TEXT] [--click SELECTOR [--then-click SELECTOR]] [--expect TEXT] [--expect-call | --expect-call-text]
       [--count SELECTOR] [--frame-height PX] [--remount TEXT] --screenshot FILE [--theme light|dark] [--switch-theme light|dark] [--timeout SECONDS] [--direct] [--keep] [--quiet]`;

function usage(message) {
  process.stderr.write(`run.mjs: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { args: '{}', theme: 'light', timeout: 90, direct: false, keep: false, quiet: false, expectCall: false, expectCallText: false };
  const valued = new Set(['--mcp', '--tool', '--data-tool', '--args', '--click', '--expect', '--screenshot', '--html',
    '--tool-result', '--theme', '--timeout', '--fill', '--value', '--switch-theme', '--then-click', '--count', '--frame-height',
    '--remount']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { process.stdout.write(USAGE + '\n'); process.exit(0); }
    if (a === '--direct') { opts.direct = true; continue; }
    if (a === '--keep') { opts.keep = true; continue; }
    if (a === '--quiet') { opts.quiet = true; continue; }
    if (a === '--expect-call') { opts.expectCall = true; continue; }
    if (a === '--expect-call-text') { opts.expectCall = true; opts.expectCallText = true; continue; }
    if (!valued.has(a)) usage(`unknown argument ${a}`);
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    const key = a.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    opts[key] = argv[++i];
  }
  if (!opts.screenshot) usage('--screenshot FILE is required');
  if (opts.html) {
    if (!opts.toolResult && !(opts.mcp && opts.tool)) usage('--html needs --tool-result (or --mcp and --tool)');
  } else if (!opts.mcp || !opts.tool) {
    usage('need --mcp URL and --tool NAME (or --html FILE)');
  }
  if (opts.mcp) {
    let u;
    try { u = new URL(opts.mcp); } catch { usage(`--mcp ${opts.mcp} is not a URL`); }
    if (u.protocol !== 'http:' || !['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)) {
      usage(`--mcp must be an http URL on the loopback interface, got ${opts.mcp}`);
    }
  }
  if (opts.args.startsWith('@')) {
    opts.argsFile = opts.args.slice(1);
    try { opts.args = readFileSync(opts.argsFile, 'utf8'); } catch (e) { usage(`--args ${opts.args}: ${e.message}`); }
  }
  try { JSON.parse(opts.args); } catch (e) { usage(`--args is not JSON: ${e.message}`); }
  if (opts.theme !== 'light' && opts.theme !== 'dark') usage('--theme is light or dark');
  if (opts.switchTheme !== undefined && opts.switchTheme !== 'light' && opts.switchTheme !== 'dark') usage('--switch-theme is light or dark');
  opts.timeout = Number(opts.timeout);
  if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) usage('--timeout must be a positive number of seconds');
  if (opts.click && !opts.expect && !opts.expectCall) {
    usage('--click needs --expect TEXT and/or --expect-call[-text] (what must happen afterwards)');
  }
  if ((opts.fill === undefined) !== (opts.value === undefined)) usage('--fill SELECTOR and --value TEXT go together');
  if (opts.expectCall && !opts.click) usage('--expect-call and --expect-call-text need --click');
  if (opts.thenClick && !opts.click) usage('--then-click needs --click');
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const deadline = started + opts.timeout * 1000;
const remaining = (cap) => Math.max(1000, Math.min(cap ?? Infinity, deadline - Date.now()));
const say = (msg) => { if (!opts.quiet) process.stderr.write(`[run.mjs] ${msg}\n`); };

// ---------------------------------------------------------------- peers

const peerRequire = createRequire(join(PEERS, 'package.json'));
function loadPeer(name) {
  try {
    return peerRequire(name);
  } catch (e) {
    process.stderr.write(`run.mjs: cannot load ${name} from tests/peers/node_modules (${e.code ?? e.message}); run bash scripts/install-peers.sh\n`);
    process.exit(2);
  }
}
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const esbuild = loadPeer('esbuild');
const { chromium } = loadPeer('playwright-core');

function findChromium() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    process.stderr.write('run.mjs: chromium not found on PATH; run bash scripts/install-peers.sh (installs Debian\'s chromium)\n');
    process.exit(2);
  }
}
const chromiumPath = findChromium();

// ---------------------------------------------------------------- state and cleanup

const summary = {
  ok: false,
  reason: null,
  mode: opts.html ? 'html' : 'server',
  mcp: opts.mcp ?? null,
  tool: opts.tool ?? null,
  args: opts.argsFile ? { file: opts.argsFile, bytes: opts.args.length } : JSON.parse(opts.args),
  chromium: chromiumPath,
  host: null,
  click: null,
  view_text: null,
  screenshot: null,
  http: [],
  console: [],
  timings_ms: {},
};

const cleanups = []; // run in reverse order
let finished = false;

async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try { await fn(); } catch (e) { say(`cleanup: ${e.message}`); }
  }
}

async function finish(ok, reason) {
  if (finished) return;
  finished = true;
  summary.ok = ok;
  summary.reason = reason ?? null;
  summary.timings_ms.total = Date.now() - started;
  await Promise.race([cleanup(), new Promise((r) => setTimeout(r, 10000))]);
  // Long strings (a tool result of megabytes) are cut: the summary is a report.
  const cut = (k, v) => (typeof v === 'string' && v.length > 20000 ? `${v.slice(0, 20000)}… (${v.length} characters)` : v);
  if (!ok) process.stderr.write(`run.mjs: FAILED: ${reason}\n`);
  // Written whole before the exit: a pipe takes it in 64 KiB pieces.
  // Playwright kills the browser it launched on exit if anything is left.
  process.stdout.write(JSON.stringify(summary, cut, 2) + '\n', () => process.exit(ok ? 0 : 1));
  await new Promise(() => {});
}

const hardStop = setTimeout(() => {
  void finish(false, `timed out after ${opts.timeout} s (last host phase: ${summary.host?.phase ?? 'not started'})`);
}, opts.timeout * 1000);
hardStop.unref();
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void finish(false, `interrupted by ${sig}`));

// ---------------------------------------------------------------- helpers

function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => { if (!opts.keep) rmSync(dir, { recursive: true, force: true }); else say(`kept ${dir}`); });
  return dir;
}

function readArgOrFile(value) {
  return value.startsWith('@') ? readFileSync(value.slice(1), 'utf8') : value;
}

// The gateway serves a widget folder as one document: local <script src> and
// <link rel=stylesheet href> are inlined. Do the same for --html, and refuse
// references that leave the folder.
function inlineLocalAssets(file) {
  const dir = dirname(realpathSync(file));
  const external = [];
  const local = (ref) => {
    if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(ref)) { external.push(ref); return null; }
    const path = resolve(dir, ref.split(/[?#]/)[0]);
    const rel = relative(dir, path);
    if (rel.startsWith('..') || isAbsolute(rel)) throw new Error(`${ref} points outside ${dir}`);
    return readFileSync(path, 'utf8');
  };
  let html = readFileSync(file, 'utf8');
  const inlined = [];
  html = html.replace(/<script\b([^>]*?)\bsrc\s*=\s*["']([^"']+)["']([^>]*)>\s*<\/script>/gi, (whole, pre, src, post) => {
    const code = local(src);
    if (code === null) return whole;
    inlined.push(src);
    const attrs = `${pre} ${post}`.replace(/\s+/g, ' ').trim();
    return `<script${attrs ? ' ' + attrs : ''}>${code.replace(/<\/script/gi, '<\\/script')}</script>`;
  });
  html = html.replace(/<link\b[^>]*>/gi, (tag) => {
    if (!/\brel\s*=\s*["']?stylesheet["']?/i.test(tag)) return tag;
    const m = /\bhref\s*=\s*["']([^"']+)["']/i.exec(tag);
    if (!m) return tag;
    const css = local(m[1]);
    if (css === null) return tag;
    inlined.push(m[1]);
    return `<style>${css.replace(/<\/style/gi, '<\\/style')}</style>`;
  });
  return { html, inlined, external };
}

// Content-Security-Policy for the sandbox page, from _meta.ui.csp, following the
// MCP Apps template (restrictive default when nothing is declared).
function buildCsp(csp) {
  const clean = (list) => (Array.isArray(list) ? list : [])
    .filter((d) => typeof d === 'string' && d && !/[;\r\n'" ]/.test(d));
  const resource = clean(csp?.resourceDomains);
  const connect = clean(csp?.connectDomains);
  const frame = clean(csp?.frameDomains);
  const base = clean(csp?.baseUriDomains);
  const join = (...parts) => parts.flat().join(' ');
  return [
    "default-src 'none'",
    `script-src ${join("'self'", "'unsafe-inline'", resource)}`,
    `style-src ${join("'self'", "'unsafe-inline'", resource)}`,
    `connect-src ${join("'self'", connect)}`,
    `img-src ${join("'self'", 'data:', resource)}`,
    `media-src ${join("'self'", 'data:', resource)}`,
    `font-src ${join("'self'", resource)}`,
    `frame-src ${frame.length ? frame.join(' ') : "'none'"}`,
    "object-src 'none'",
    `base-uri ${base.length ? base.join(' ') : "'self'"}`,
  ].join('; ');
}

function rpcMethods(body) {
  try {
    const msg = JSON.parse(body);
    const one = (m) => (m && typeof m.method === 'string' ? m.method : m && 'id' in m ? 'response' : '?');
    return Array.isArray(msg) ? msg.map(one).join(',') : one(msg);
  } catch {
    return null;
  }
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer',
  'host', 'origin', 'referer', 'cookie', 'content-length']);

// A tiny HTTP server on 127.0.0.1:0. `routes` maps a path to {type, body, headers?}
// or to a handler (req, res, url).
async function startServer(name, routes, mcpTarget) {
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (mcpTarget && url.pathname === '/mcp') return proxyMcp(req, res, mcpTarget);
    const route = routes[url.pathname];
    if (!route) { res.writeHead(404, { 'content-type': 'text/plain' }); return res.end('not found'); }
    if (typeof route === 'function') return route(req, res, url);
    res.writeHead(200, { 'content-type': route.type, 'cache-control': 'no-store', ...(route.headers ?? {}) });
    res.end(route.body);
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((ok, fail) => { server.once('error', fail); server.listen(0, '127.0.0.1', ok); });
  const { port } = server.address();
  cleanups.push(() => new Promise((ok) => {
    for (const s of sockets) s.destroy();
    server.close(() => ok());
  }));
  say(`${name} server on http://127.0.0.1:${port}`);
  return `http://127.0.0.1:${port}`;
}

// Forwards the page's MCP traffic to the real endpoint (so the upstream needs no
// CORS): method, body and MCP headers as they are, the response streamed back.
function proxyMcp(req, res, target) {
  const t0 = Date.now();
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const entry = { method: req.method, rpc: body.length ? rpcMethods(body.toString('utf8')) : null, status: null, ms: null };
    summary.http.push(entry);
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(k) && !k.startsWith('sec-')) headers[k] = v;
    }
    if (body.length) headers['content-length'] = String(body.length);
    const upstream = http.request(target, { method: req.method, headers, timeout: remaining(60000) }, (up) => {
      entry.status = up.statusCode;
      const out = {};
      for (const [k, v] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(k)) out[k] = v;
      res.writeHead(up.statusCode, out);
      up.pipe(res);
      up.on('end', () => { entry.ms = Date.now() - t0; });
    });
    upstream.on('timeout', () => upstream.destroy(new Error('upstream timed out')));
    upstream.on('error', (e) => {
      entry.status = entry.status ?? 502;
      entry.error = e.message;
      if (!res.headersSent) { res.writeHead(502, { 'content-type': 'text/plain' }); res.end(`proxy: ${e.message}`); }
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    upstream.end(body);
  });
}

// ---------------------------------------------------------------- main

async function main() {
  const work = tempDir('mcp-browser-');
  const site = join(work, 'site');
  mkdirSync(site);

  // Bundle the host page.
  let t = Date.now();
  await esbuild.build({
    entryPoints: [join(HOST_DIR, 'host.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(site, 'host.js'),
    nodePaths: [join(PEERS, 'node_modules')],
    logLevel: 'error',
    legalComments: 'none',
  });
  summary.timings_ms.bundle = Date.now() - t;

  const routes = {
    '/': { type: 'text/html; charset=utf-8', body: readFileSync(join(HOST_DIR, 'index.html')) },
    '/index.html': { type: 'text/html; charset=utf-8', body: readFileSync(join(HOST_DIR, 'index.html')) },
    '/host.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(site, 'host.js')) },
    '/favicon.ico': { type: 'image/x-icon', body: '' },
  };
  const query = new URLSearchParams();
  if (opts.html) {
    const { html, inlined, external } = inlineLocalAssets(opts.html);
    summary.html = { file: opts.html, inlined, external };
    if (external.length) say(`warning: ${opts.html} references external resources: ${external.join(', ')}`);
    routes['/fixture/view.html'] = { type: 'text/html; charset=utf-8', body: html };
    query.set('html', '/fixture/view.html');
    if (opts.toolResult) {
      const text = readArgOrFile(opts.toolResult);
      try { JSON.parse(text); } catch (e) { throw new Error(`--tool-result is not JSON: ${e.message}`); }
      routes['/fixture/tool-result.json'] = { type: 'application/json', body: text };
      query.set('toolResultUrl', '/fixture/tool-result.json');
    }
  }
  const hostOrigin = await startServer('host', routes, opts.direct ? null : opts.mcp);

  // The sandbox proxy lives on a second origin (another port), as MCP Apps asks.
  const sandboxOrigin = await startServer('sandbox', {
    '/sandbox.html': (req, res, url) => {
      let csp = {};
      try { csp = JSON.parse(url.searchParams.get('csp') || '{}'); } catch { /* restrictive default */ }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache, no-store, must-revalidate',
        'content-security-policy': buildCsp(csp),
      });
      res.end(readFileSync(join(HOST_DIR, 'sandbox.html')));
    },
    '/sandbox.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(HOST_DIR, 'sandbox.js')) },
  });

  if (opts.mcp) query.set('mcp', opts.direct ? opts.mcp : '/mcp');
  if (opts.tool) query.set('tool', opts.tool);
  if (opts.dataTool) query.set('dataTool', opts.dataTool);
  // Arguments from a file may be too long for a URL: the page fetches them.
  if (opts.argsFile) {
    routes['/fixture/args.json'] = { type: 'application/json', body: opts.args };
    query.set('argsUrl', '/fixture/args.json');
  } else query.set('args', opts.args);
  query.set('theme', opts.theme);
  if (opts.frameHeight) query.set('frameHeight', opts.frameHeight);
  query.set('toolCallId', `call-${process.pid}-${started}`);
  query.set('sandbox', `${sandboxOrigin}/sandbox.html`);
  const pageUrl = `${hostOrigin}/?${query}`;

  // Chromium: Debian's binary, fresh profile and HOME, nothing downloaded.
  const home = tempDir('mcp-browser-home-');
  const profile = join(home, 'profile');
  t = Date.now();
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    env: { ...process.env, HOME: home },
    viewport: { width: 1100, height: 720 },
    deviceScaleFactor: 1,
    timeout: remaining(30000),
  });
  cleanups.push(() => Promise.race([context.close(), new Promise((r) => setTimeout(r, 5000))]));
  summary.timings_ms.launch = Date.now() - t;
  summary.chromium_version = context.browser()?.version() ?? null;

  const page = context.pages()[0] ?? await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'debug') return; // AppBridge traces every message at debug level
    if (summary.console.length < 200) summary.console.push({ type: m.type(), text: m.text().slice(0, 500), url: m.location()?.url?.slice(0, 120) });
  });
  page.on('pageerror', (e) => summary.console.push({ type: 'pageerror', text: String(e.message).slice(0, 500) }));

  t = Date.now();
  await page.goto(pageUrl, { timeout: remaining(20000), waitUntil: 'load' });
  let waitError = null;
  try {
    await page.waitForFunction(() => window.__host && (window.__host.done || window.__host.error),
      null, { timeout: remaining(45000), polling: 100 });
  } catch (e) {
    waitError = e;
  }
  summary.host = await hostSnapshot(page);
  summary.timings_ms.render = Date.now() - t;
  if (summary.host?.error) throw new Error(`host: ${summary.host.error}`);
  if (waitError) throw new Error(`the View did not finish rendering (host phase: ${summary.host?.phase}): ${waitError.message.split('\n')[0]}`);

  const view = page.frameLocator('#view-sandbox').frameLocator('#view');
  // Let the View apply the result and report its size.
  await page.waitForTimeout(400);

  const viewText = () => view.locator('body').innerText({ timeout: remaining(5000) }).catch(() => '');
  if (opts.count) summary.count = await view.locator(opts.count).count();
  const callsBefore = summary.host?.view_calls?.length ?? 0;
  if (opts.switchTheme) {
    await page.evaluate((theme) => window.__host.setTheme(theme), opts.switchTheme);
    summary.switched_theme = opts.switchTheme;
    await page.waitForTimeout(300);
  }
  if (opts.fill) {
    await view.locator(opts.fill).first().fill(opts.value, { timeout: remaining(10000) });
  }
  if (opts.click) {
    t = Date.now();
    summary.click = { selector: opts.click, expect: opts.expect ?? null, expect_call: opts.expectCall, expect_call_text: opts.expectCallText, found: false };
    await view.locator(opts.click).first().click({ timeout: remaining(15000) });
    if (opts.thenClick) await view.locator(opts.thenClick).first().click({ timeout: remaining(15000) });
    summary.click.clicked = true;
  }
  if (opts.expect || opts.expectCall) {
    summary.click = summary.click ?? { selector: null, expect: opts.expect, found: false };
    const until = Date.now() + remaining(15000);
    let text = '';
    let wanted = opts.expect ?? null;
    for (;;) {
      if (opts.expectCall && summary.click.view_call === undefined) {
        // The click must have made the View call a tool through the host.
        const call = await page.evaluate((n) => window.__host.viewCalls.slice(n).find((c) => c.result || c.error) ?? null, callsBefore);
        if (call) {
          const first = (call.result?.content ?? []).find((c) => c.type === 'text');
          summary.click.view_call = {
            name: call.name, arguments: call.arguments, error: call.error ?? null,
            is_error: call.result?.isError === true, result_text: first ? first.text : null,
          };
        }
      }
      text = await viewText();
      const vc = summary.click.view_call;
      const callOk = !opts.expectCall || (vc !== undefined && !vc.error && !vc.is_error);
      const callTextShown = !opts.expectCallText || (typeof vc?.result_text === 'string' && text.includes(vc.result_text));
      if ((wanted === null || text.includes(wanted)) && callOk && callTextShown) { summary.click.found = true; break; }
      if (vc && (vc.error || vc.is_error)) break; // failed call: no point waiting
      if (Date.now() >= until) break;
      await page.waitForTimeout(100);
    }
    if (opts.click) summary.timings_ms.click = Date.now() - t;
    await page.waitForTimeout(300); // size change after the update
  }

  summary.view_text = (await view.locator('body').innerText({ timeout: remaining(5000) }).catch((e) => `(unreadable: ${e.message.split('\n')[0]})`)).slice(0, 2000);
  // How the View looks now: its theme attribute and the colours it computes.
  summary.view_style = await view.locator('html').evaluate((html) => {
    const body = getComputedStyle(document.body);
    return { theme: html.getAttribute('data-theme'), color_scheme: getComputedStyle(html).colorScheme,
      background: body.backgroundColor, color: body.color };
  }, null, { timeout: remaining(5000) }).catch((e) => ({ error: e.message.split('\n')[0] }));
  const shot = resolve(opts.screenshot);
  mkdirSync(dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true, timeout: remaining(15000) });
  summary.screenshot = shot;

  // Tear the View down the way a host must (ui/resource-teardown, answered).
  await page.evaluate(() => window.__host.teardownView()).catch(() => {});
  summary.host = await hostSnapshot(page);

  if (opts.remount) {
    t = Date.now();
    await page.goto(pageUrl, { timeout: remaining(20000), waitUntil: 'load' });
    await page.waitForFunction(() => window.__host && (window.__host.done || window.__host.error),
      null, { timeout: remaining(45000), polling: 100 }).catch(() => {});
    const until = Date.now() + remaining(15000);
    let text = '';
    while (Date.now() < until) {
      text = await view.locator('body').innerText({ timeout: remaining(5000) }).catch(() => '');
      if (text.includes(opts.remount)) break;
      await page.waitForTimeout(100);
    }
    summary.remount = { expect: opts.remount, found: text.includes(opts.remount), view_text: text.slice(0, 2000),
      host: await hostSnapshot(page), ms: Date.now() - t };
    if (!summary.remount.found) return finish(false, `after a remount, expected ${JSON.stringify(opts.remount)} in the View, not found`);
  }

  if (summary.click && !summary.click.found) {
    const what = [
      opts.expect ? `text ${JSON.stringify(opts.expect)}` : null,
      opts.expectCall ? (summary.click.view_call === undefined
        ? 'a tools/call from the View (none completed)'
        : summary.click.view_call.error || summary.click.view_call.is_error
          ? `a successful tools/call from the View (${summary.click.view_call.name} failed: ${summary.click.view_call.error ?? summary.click.view_call.result_text})`
          : opts.expectCallText ? `the View's tools/call result text ${JSON.stringify(summary.click.view_call.result_text)}` : null) : null,
    ].filter(Boolean).join(' and ');
    return finish(false, `expected ${what} in the View${opts.click ? ` after clicking ${opts.click}` : ''}, not found`);
  }
  return finish(true);
}

async function hostSnapshot(page) {
  return page.evaluate(() => {
    const h = window.__host;
    if (!h) return null;
    const counts = {};
    for (const m of h.bridge) {
      const key = `${m.dir} ${m.method ?? m.kind}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return {
      phase: h.phase, done: h.done, error: h.error, server: h.server,
      tool: h.tool, resource: h.resource, csp: h.csp,
      app_info: h.appInfo, app_capabilities: h.appCapabilities,
      initialized: h.initialized, tool_input_sent: h.toolInputSent, tool_result_sent: h.toolResultSent,
      tool_result: h.toolResult, last_tool_result: h.lastToolResult,
      data_tool: h.dataTool, data_result: h.dataResult,
      view_calls: h.viewCalls, sizes: h.sizes.slice(-3), size_changes: h.sizes.length,
      bridge: counts, teardown: h.teardown,
      errors: h.log.filter((l) => l.level === 'error').map((l) => l.msg),
    };
  }).catch(() => null);
}

main().catch((e) => finish(false, e?.message ?? String(e)));
