#!/usr/bin/env node
// Browser driver for the /preview page: opens it in headless Chromium, calls the demo's
// add_task from the generated form, checks that the task board renders the upstream's
// tasks in the sandboxed iframe, clicks Done in the widget (complete_task through the
// bridge), switches the theme, and, with --overlays, edits the widget's HTML and waits
// for the page to render the new version. Prints a JSON summary on stdout.
//
//   node tests/preview/run.mjs --url http://127.0.0.1:PORT/preview --screenshot FILE
//        [--overlays DIR] [--openai-widget] [--builtin-table] [--timeout SECONDS]
//   node tests/preview/run.mjs --url URL --screenshot FILE --call TOOL [--args JSON]
//        --expect TEXT [--count SELECTOR] [--timeout SECONDS]
//   node tests/preview/run.mjs --url URL --screenshot FILE --switch-mount PATH --expect-tool NAME
//
// --switch-mount PATH: as soon as the page lists the mounts (the first still connecting),
// choose the one whose label holds PATH, wait until its tool NAME is listed, then 5 s
// more; the summary says what the page shows then (checks.server, checks.connection,
// checks.tools).
// --call TOOL: only call TOOL of the first mount from the form (the fields filled from
// --args, an object) and wait until its widget shows TEXT; --count SELECTOR reports how
// many elements of the widget match. The summary says how long the page's own thread
// was held at most from the click on (checks.page_stall_ms, a 20 ms heartbeat), how
// many characters the result panel and the bridge log hold, the bridge log's errors,
// and the widget's text.
//
// --fill-from NAME (with --call): fill the form with the "Use data from NAME" button instead
// of --args (a render tool's data tool), then call.
//
//   node tests/preview/run.mjs --url URL --screenshot FILE --sign-in LOGIN [--call TOOL --args JSON
//        --expect TEXT] [--whoami PATH] [--expire-wait SECONDS] [--sign-out] [--password P]
//   node tests/preview/run.mjs --url URL --screenshot FILE --paste TOKEN [--paste-bad TOKEN]
//        [--call TOOL --args JSON --expect TEXT]
//
// --sign-in LOGIN: the first mount asks for a token and the gateway signs users in: the page
// shows its sign-in panel (checks.panel); click Sign in, allow on the gateway's consent page
// and sign in at the provider's login form as LOGIN (tests/peers/browser_sign_in.mjs's
// answerSignIn), back at /preview with the tools listed (checks.first: the account shown,
// the authorization request's parameters, the callback's parameter names, where the page
// ended); what the page keeps (checks.storage). Then --call as below; --whoami PATH: choose the
// mount at PATH, sign in there too (checks.second) and call its `whoami` tool
// (checks.whoami: its text); --expire-wait S: S seconds later call it again
// (checks.whoami_again) and say whether the page refreshed its token (checks.refreshed);
// --sign-out: click Sign out (checks.signed_out).
//   node tests/preview/run.mjs --url URL --screenshot FILE --forged-callbacks
//
// --forged-callbacks: the first mount signs in with the gateway; each time a sign-in is
// started (the authorization endpoint never reached), the page is sent back an answer that
// is not the one it waits for: another state, another issuer, none, an error; then the
// same answer again once nothing is under way. checks.callbacks: for each, the error the
// page shows, its address, whether it kept a token, whether it sent the code anywhere.
// --paste TOKEN: the first mount asks for a token pasted in (checks.panel); with --paste-bad,
// paste that one first and report the error shown (checks.bad_token); paste TOKEN, wait for
// the tools (checks.pasted), then --call as below.
//
// --hosts: list_tasks renders the built-in table and complete_task the window.openai-only
// widget (both installed by the caller): the page's "What each host sees" table before any
// call (checks.table_before), then list_tasks called and rendered as each host in turn
// (checks.as.<host>: the frame's host, the host CSS variable the widget's root computes,
// the frame's height, the table's cells), the widget made 900 px taller as Claude
// (checks.claude_tall), and complete_task {"id": 1} rendered as ChatGPT (checks.openai_as_chatgpt:
// the toolInput the widget saw first, its globals, the variable it computes).
// --builtin-table: list_tasks renders the built-in table (widget = "builtin:table")
// --openai-widget: complete_task renders a widget that only knows window.openai
// (tests/preview/openai-only, installed in the overlays by the caller); call it and
// click its button.
// Exit status: 0 on success, 1 on failure ("ok": false and the reason in the summary),
// 2 on bad usage or a missing peer. Only 127.0.0.1 (and the name localhost) is used; the Chromium started here
// is closed before exit. Nothing is downloaded: Chromium is Debian's.

import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const PEERS = resolve(HERE, '..', 'peers');
const started = Date.now();

function usage(message) {
  process.stderr.write(`run.mjs: ${message}\nusage: node tests/preview/run.mjs --url URL --screenshot FILE [--overlays DIR] [--openai-widget] [--builtin-table] [--timeout SECONDS]\n`);
  process.exit(2);
}

const opts = { timeout: 90 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  if (argv[i] === '--openai-widget') { opts.openaiWidget = true; i -= 1; continue; }
  if (argv[i] === '--builtin-table') { opts.builtinTable = true; i -= 1; continue; }
  if (argv[i] === '--hosts') { opts.hosts = true; i -= 1; continue; }
  if (argv[i] === '--sign-out') { opts.signOut = true; i -= 1; continue; }
  if (argv[i] === '--forged-callbacks') { opts.forged = true; i -= 1; continue; }
  const key = {
    '--url': 'url', '--screenshot': 'screenshot', '--overlays': 'overlays', '--timeout': 'timeout',
    '--call': 'call', '--args': 'args', '--expect': 'expect', '--count': 'count',
    '--switch-mount': 'switchMount', '--expect-tool': 'expectTool', '--fill-from': 'fillFrom',
    '--sign-in': 'signIn', '--whoami': 'whoami', '--expire-wait': 'expireWait',
    '--paste': 'paste', '--paste-bad': 'pasteBad', '--password': 'password',
  }[argv[i]];
  if (!key) usage(`unknown argument ${argv[i]}`);
  if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
  opts[key] = argv[i + 1];
}
if (!opts.url || !opts.screenshot) usage('--url and --screenshot are required');
// The provider's password for --sign-in (tests/peers/oidc_provider.mjs --login-form's by default).
const PASSWORD = opts.password ?? 'correct horse';
if (opts.call && !opts.expect) usage('--call needs --expect TEXT');
if (opts.switchMount && !opts.expectTool) usage('--switch-mount needs --expect-tool NAME');
let callArgs = {};
try { callArgs = JSON.parse(opts.args ?? '{}'); } catch (e) { usage(`--args: ${e.message}`); }
const pageUrl = new URL(opts.url);
const LOCAL = ['127.0.0.1', 'localhost'];
if (pageUrl.protocol !== 'http:' || !LOCAL.includes(pageUrl.hostname)) usage('--url must be http://127.0.0.1:… or http://localhost:…');
opts.timeout = Number(opts.timeout);
if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) usage('--timeout must be a positive number');
const deadline = started + opts.timeout * 1000;
const left = (cap) => Math.max(1000, Math.min(cap, deadline - Date.now()));
const say = (m) => process.stderr.write(`[preview/run.mjs] ${m}\n`);

const peerRequire = createRequire(join(PEERS, 'package.json'));
let chromium;
let answerSignIn;
try {
  process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
  ({ chromium } = peerRequire('playwright-core'));
  if (opts.signIn) ({ answerSignIn } = await import(pathToFileURL(join(PEERS, 'browser_sign_in.mjs')).href));
} catch (e) {
  process.stderr.write(`run.mjs: cannot load playwright-core from tests/peers/node_modules (${e.code ?? e.message}); run bash scripts/install-peers.sh\n`);
  process.exit(2);
}
let chromiumPath = process.env.CHROMIUM;
if (!chromiumPath) {
  try {
    chromiumPath = execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    process.stderr.write('run.mjs: chromium not found on PATH; run bash scripts/install-peers.sh\n');
    process.exit(2);
  }
}

const summary = { ok: false, reason: null, url: opts.url, steps: [], checks: {}, timings_ms: {}, console: [], screenshot: null };
let browser = null;
let home = null;
let finished = false;

async function finish(ok, reason) {
  if (finished) return;
  finished = true;
  summary.ok = ok;
  summary.reason = reason ?? null;
  summary.timings_ms.total = Date.now() - started;
  if (browser) await Promise.race([browser.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  if (home) rmSync(home, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  if (!ok) process.stderr.write(`run.mjs: FAILED: ${reason}\n`);
  process.exit(ok ? 0 : 1);
}
setTimeout(() => void finish(false, `timed out after ${opts.timeout} s (last step: ${summary.steps.at(-1)?.name ?? 'none'})`), opts.timeout * 1000).unref();
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void finish(false, `interrupted by ${sig}`));

async function step(name, fn) {
  const t = Date.now();
  say(name);
  summary.steps.push({ name });
  const value = await fn();
  summary.steps.at(-1).ms = Date.now() - t;
  return value;
}

async function main() {
  home = mkdtempSync(join(tmpdir(), 'mcp-preview-home-'));
  browser = await step('launch chromium', () => chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    env: { ...process.env, HOME: home },
    timeout: left(30000),
  }));
  const context = await browser.newContext({ viewport: { width: 1400, height: 860 }, deviceScaleFactor: 1, colorScheme: 'light' });
  // Nothing leaves the machine: any request to another host fails the run.
  const offsite = [];
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (!LOCAL.includes(u.hostname)) { offsite.push(u.href); return route.abort(); }
    return route.continue();
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (summary.console.length < 200) summary.console.push({ type: m.type(), text: m.text().slice(0, 400), url: m.location()?.url?.slice(0, 120) });
  });
  page.on('pageerror', (e) => summary.console.push({ type: 'pageerror', text: String(e.message).slice(0, 400) }));

  if (opts.switchMount) return switchMount(page);
  if (opts.signIn) return signInFlow(page);
  if (opts.paste) return pasteFlow(page);
  if (opts.forged) return forgedCallbacks(page);
  if (opts.hosts) return hostsFlow(page);
  await step('open /preview', async () => {
    const response = await page.goto(opts.url, { timeout: left(20000), waitUntil: 'load' });
    summary.checks.page_status = response.status();
    summary.checks.page_csp = response.headers()['content-security-policy'] ?? null;
    await page.locator(`#tool-list button[data-tool="${opts.call ?? 'add_task'}"]`).waitFor({ timeout: left(30000) });
    // An open mount: no sign-in panel, no account.
    summary.checks.auth_panel_visible = await page.isVisible('#auth-panel');
    summary.checks.account_visible = await page.isVisible('#account');
    summary.checks.tools = await page.$$eval('#tool-list button[data-tool]', (bs) => bs.map((b) => b.dataset.tool));
    summary.checks.auth_badges = await page.$$eval('#tool-list button[data-tool]', (bs) =>
      Object.fromEntries(bs.map((b) => [b.dataset.tool, [...b.querySelectorAll('.badge.auth')].map((x) => x.textContent)])));
    summary.checks.server = await page.textContent('#server');
  });

  if (opts.call) return callOne(page);
  const title = 'Try the preview page';
  await step('call add_task from the form', async () => {
    // Take both panels the moment the result shows: the widget this call
    // renders makes calls of its own, which replace them.
    await page.evaluate(() => {
      const result = document.getElementById('raw-result');
      window.__formCall = null;
      const seen = new MutationObserver(() => {
        const text = result.textContent;
        if (window.__formCall || !/"isError"|"result"/.test(text)) return;
        window.__formCall = { request: document.getElementById('raw-request').textContent, result: text };
        seen.disconnect();
      });
      seen.observe(result, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#tool-list button[data-tool="add_task"]');
    await page.fill('#arg-title', title);
    await page.click('#call-button');
    const shown = await page.waitForFunction(() => window.__formCall, null, { timeout: left(30000), polling: 100 });
    const panels = await shown.jsonValue();
    summary.checks.form_request = JSON.parse(panels.request);
    summary.checks.form_result = JSON.parse(panels.result);
  });

  const widget = page.frameLocator('#widget-host iframe');
  const frameOf = async () => (await page.$('#widget-host iframe')).contentFrame();
  await step('the widget renders the upstream tasks', async () => {
    const t = Date.now();
    await widget.locator('li[data-task-id="2"] .task-title').waitFor({ timeout: left(30000) });
    await widget.locator('.task-title', { hasText: title }).waitFor({ timeout: left(15000) });
    summary.timings_ms.widget_render = Date.now() - t;
    const frame = await frameOf();
    summary.checks.widget_titles = await frame.$$eval('.task-title', (els) => els.map((e) => e.textContent));
    summary.checks.widget_openai = await frame.evaluate(() => ({
      present: typeof window.openai === 'object' && typeof window.openai.callTool === 'function',
      toolInput: window.openai && window.openai.toolInput,
      toolOutput: window.openai && window.openai.toolOutput,
      theme: window.openai && window.openai.theme,
    }));
    summary.checks.iframe_sandbox = await page.getAttribute('#widget-host iframe', 'sandbox');
    summary.checks.widget_uri = await page.textContent('#widget-uri');
  });

  await step('the widget is confined by its CSP', async () => {
    const frame = await frameOf();
    summary.checks.csp_violation = await frame.evaluate(() => new Promise((done) => {
      const timer = setTimeout(() => done(null), 5000);
      document.addEventListener('securitypolicyviolation', (e) => { clearTimeout(timer); done(e.effectiveDirective); }, { once: true });
      fetch('http://127.0.0.1:9/blocked-by-csp').catch(() => {});
    }));
    summary.checks.widget_origin = await frame.evaluate(() => String(window.origin));
  });

  await step('the sandbox document is sandboxed even when opened on its own', async () => {
    const alone = await context.newPage();
    await alone.goto(new URL('/preview/sandbox', opts.url).href, { timeout: left(10000), waitUntil: 'load' });
    summary.checks.sandbox_alone_origin = await alone.evaluate(() => String(window.origin));
    await alone.close();
  });

  await step('click Done in the widget (complete_task through the bridge)', async () => {
    await widget.locator('li[data-task-id="2"] button[data-action="complete"]').click({ timeout: left(10000) });
    await widget.locator('li[data-task-id="2"][data-done="true"]').waitFor({ timeout: left(30000) });
    await page.waitForFunction(() => document.getElementById('request-origin').textContent.includes('widget')
      && /"done": true/.test(document.getElementById('raw-result').textContent), null, { timeout: left(15000), polling: 100 });
    summary.checks.widget_request = JSON.parse(await page.textContent('#raw-request'));
    summary.checks.widget_result = JSON.parse(await page.textContent('#raw-result'));
    summary.checks.widget_status = await widget.locator('#status').textContent();
  });

  await step('window.openai reaches the host (message, model context, link, display mode)', async () => {
    const frame = await frameOf();
    summary.checks.openai_calls = await frame.evaluate(async () => {
      await window.openai.sendFollowUpMessage({ prompt: 'Summarise my open tasks' });
      await window.openai.setWidgetState({ selected: 2 });
      await window.openai.openExternal({ href: 'https://example.com/docs' });
      const pip = await window.openai.requestDisplayMode({ mode: 'pip' });
      const inline = await window.openai.requestDisplayMode({ mode: 'inline' });
      return { pip: pip.mode, inline: inline.mode, displayMode: window.openai.displayMode };
    });
    summary.checks.side_panel = await page.$$eval('#side-panel li', (lis) => lis.map((li) => li.textContent));
    const text = summary.checks.side_panel.join('\n');
    for (const want of ['Summarise my open tasks', '"selected": 2', 'https://example.com/docs']) {
      if (!text.includes(want)) throw new Error(`the side panel does not show ${want}: ${text}`);
    }
    if (summary.checks.openai_calls.pip !== 'pip' || summary.checks.openai_calls.displayMode !== 'inline') {
      throw new Error(`requestDisplayMode: ${JSON.stringify(summary.checks.openai_calls)}`);
    }
  });

  await step('screenshot', async () => {
    mkdirSync(dirname(resolve(opts.screenshot)), { recursive: true });
    await page.waitForTimeout(300);
    await page.screenshot({ path: opts.screenshot, fullPage: false });
    summary.screenshot = opts.screenshot;
  });

  await step('switch the theme to dark', async () => {
    await page.selectOption('#theme', 'dark');
    const frame = await frameOf();
    await frame.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'dark'
      && window.openai.theme === 'dark', null, { timeout: left(10000), polling: 100 });
    summary.checks.theme_in_widget = 'dark';
    await page.selectOption('#display-mode', 'fullscreen');
    await page.waitForFunction(() => document.getElementById('widget-host').dataset.displayMode === 'fullscreen',
      null, { timeout: left(5000) });
    await frame.waitForFunction(() => window.openai.displayMode === 'fullscreen', null, { timeout: left(10000), polling: 100 });
    await page.selectOption('#display-mode', 'inline');
    summary.checks.display_mode_in_widget = 'fullscreen';
    await page.selectOption('#locale', 'fr-FR');
    await frame.waitForFunction(() => window.openai.locale === 'fr-FR', null, { timeout: left(10000), polling: 100 });
    summary.checks.locale_in_widget = 'fr-FR';
  });

  if (opts.overlays) {
    await step('edit the overlay: the widget renders again', async () => {
      const file = join(opts.overlays, 'widgets', 'task-board', 'index.html');
      const before = readFileSync(file, 'utf8');
      const edited = before.replace('<h1 id="board-title">Tasks</h1>', '<h1 id="board-title">Tasks (edited)</h1>');
      if (edited === before) throw new Error(`${file}: the board title to edit is not there`);
      const uriBefore = await page.textContent('#widget-uri');
      const t = Date.now();
      writeFileSync(file, edited);
      await widget.locator('#board-title', { hasText: 'Tasks (edited)' }).waitFor({ timeout: left(30000) });
      summary.timings_ms.overlay_save_to_render = Date.now() - t;
      await widget.locator('li[data-task-id="2"][data-done="true"]').waitFor({ timeout: left(15000) });
      summary.checks.reload = { uri_before: uriBefore, uri_after: await page.textContent('#widget-uri') };
    });
  }

  if (opts.builtinTable) {
    // list_tasks renders a built-in widget: compiled by the gateway, listed and
    // rendered by the page like a folder widget.
    await step('a built-in table (list_tasks from the form)', async () => {
      await page.click('#tool-list button[data-tool="list_tasks"]');
      await page.click('#call-button');
      await widget.locator('table tbody tr', { hasText: title }).waitFor({ timeout: left(20000) });
      await widget.locator('th button', { hasText: 'Title' }).click({ timeout: left(5000) });
      await widget.locator('#status', { hasText: 'Sorted by Title' }).waitFor({ timeout: left(5000) });
      summary.checks.builtin_table = {
        uri: await page.textContent('#widget-uri'),
        rows: await widget.locator('table tbody tr').count(),
        first_row: await widget.locator('table tbody tr').first().textContent(),
        theme: await widget.locator('html').getAttribute('data-theme'),
      };
    });
  }

  if (opts.openaiWidget) {
    // complete_task renders tests/preview/openai-only (window.openai, no ui/* code).
    await step('a window.openai-only widget (complete_task with id 3 from the form)', async () => {
      await page.click('#tool-list button[data-tool="complete_task"]');
      await page.fill('#arg-id', '3');
      await page.click('#call-button');
      await widget.locator('#output', { hasText: 'Book the team dinner done=true' }).waitFor({ timeout: left(20000) });
      await widget.locator('#globals', { hasText: 'theme=dark' }).waitFor({ timeout: left(5000) });
      await widget.locator('#refresh').click({ timeout: left(5000) });
      await widget.locator('#called', { hasText: 'tasks' }).waitFor({ timeout: left(15000) });
      // It says nothing of its height: the page measures it, and the frame
      // leaves its 320 px default for the content's height.
      await page.waitForFunction(() => document.querySelector('#widget-host iframe').style.height !== '',
        null, { timeout: left(10000), polling: 100 });
      summary.checks.openai_widget = {
        frame_height: await page.$eval('#widget-host iframe', (f) => f.getBoundingClientRect().height),
        output: await widget.locator('#output').textContent(),
        globals: await widget.locator('#globals').textContent(),
        called: await widget.locator('#called').textContent(),
      };
      // The compatibility object started the bridge itself.
      await page.waitForFunction(() => Array.from(document.querySelectorAll('#bridge-log li'))
        .some((li) => li.textContent.includes('"name":"window.openai"')), null, { timeout: left(10000), polling: 100 });
    });
  }

  summary.checks.offsite_requests = offsite;
  summary.checks.bridge_log = await page.$$eval('#bridge-log li', (lis) => lis.slice(-80).map((li) => li.textContent.slice(0, 160)));
  if (offsite.length) throw new Error(`requests left the machine: ${offsite.join(', ')}`);
  const errors = summary.console.filter((m) => m.type === 'pageerror'
    || (m.type === 'error' && !/blocked-by-csp|127\.0\.0\.1:9\//.test(m.text)));
  if (errors.length) throw new Error(`the browser reported errors: ${JSON.stringify(errors)}`);
}

// The browser's report of a response refused as the sign-in expects (a 401 asking for a
// token, the token endpoint's 400 to the check of a registered client, a provider page's
// missing favicon): not an error of the page.
const EXPECTED_REFUSAL = /^Failed to load resource: the server responded with a status of (400|401|404) /;

// The last steps of the one-purpose modes: a screenshot, and no console error.
async function endClean(page) {
  await step('screenshot', async () => {
    mkdirSync(dirname(resolve(opts.screenshot)), { recursive: true });
    await page.screenshot({ path: opts.screenshot, fullPage: false });
    summary.screenshot = opts.screenshot;
  });
  const expected = opts.signIn || opts.paste || opts.forged;
  const errors = summary.console.filter((m) => m.type === 'pageerror'
    || (m.type === 'error' && !(expected && EXPECTED_REFUSAL.test(m.text))));
  if (errors.length) throw new Error(`the browser reported errors: ${JSON.stringify(errors)}`);
}

// --switch-mount: another mount chosen while the first is still connecting.
async function switchMount(page) {
  await step('open /preview', async () => {
    const response = await page.goto(opts.url, { timeout: left(20000), waitUntil: 'load' });
    summary.checks.page_status = response.status();
    await page.waitForFunction(() => document.querySelectorAll('#mount option').length >= 2, null,
      { timeout: left(20000), polling: 50 });
  });
  await step(`choose the mount at ${opts.switchMount} at once`, async () => {
    summary.checks.connection_at_switch = await page.textContent('#connection');
    const value = await page.$$eval('#mount option', (os, path) => {
      const o = os.find((x) => x.textContent.includes(path));
      return o ? o.value : null;
    }, opts.switchMount);
    if (value === null) throw new Error(`no mount labelled with ${opts.switchMount}`);
    await page.selectOption('#mount', value);
    await page.locator(`#tool-list button[data-tool="${opts.expectTool}"]`).waitFor({ timeout: left(30000) });
  });
  await step('5 s later: what the page shows', async () => {
    await page.waitForTimeout(5000);
    summary.checks.server = await page.textContent('#server');
    summary.checks.connection = await page.textContent('#connection');
    summary.checks.tools = await page.$$eval('#tool-list button[data-tool]', (bs) => bs.map((b) => b.dataset.tool));
    summary.checks.bridge_log_errors = await page.$$eval('#bridge-log li[data-kind="error"]', (lis) => lis.map((li) => li.textContent));
  });
  await endClean(page);
}

// --call: one call from the form, its widget, and what it cost the page.
async function callOne(page) {
  await callAndSee(page);
  await endClean(page);
}

// The call of --call from the form (its fields from --args, or filled by --fill-from),
// and its widget showing --expect.
async function callAndSee(page) {
  const widget = page.frameLocator('#widget-host iframe');
  await step(`call ${opts.call} from the form`, async () => {
    await page.click(`#tool-list button[data-tool="${opts.call}"]`);
    for (const [name, value] of Object.entries(callArgs)) {
      await page.fill(`#arg-${name}`, typeof value === 'string' ? value : JSON.stringify(value));
    }
    if (opts.fillFrom) {
      await page.click(`#fill-from button[data-fill-from="${opts.fillFrom}"]`);
      await page.locator('#fill-note').waitFor({ state: 'visible', timeout: left(20000) });
      summary.checks.fill_note = await page.textContent('#fill-note');
      summary.checks.fill_note_error = await page.$eval('#fill-note', (n) => n.classList.contains('error'));
      summary.checks.filled = await page.$$eval('#fields [data-arg]', (inputs) =>
        Object.fromEntries(inputs.map((i) => [i.dataset.arg, i.value])));
      summary.checks.data_request = JSON.parse(await page.textContent('#raw-request'));
    }
    await page.evaluate(() => {
      const beat = { last: performance.now(), max: 0 };
      window.__heartbeat = beat;
      setInterval(() => {
        const now = performance.now();
        beat.max = Math.max(beat.max, now - beat.last);
        beat.last = now;
      }, 20);
    });
    await page.click('#call-button');
  });
  await step(`the widget shows ${JSON.stringify(opts.expect)}`, async () => {
    const t = Date.now();
    try {
      await widget.getByText(opts.expect).first().waitFor({ timeout: left(120000) });
    } catch (e) {
      const shown = await widget.locator('body').innerText({ timeout: 2000 }).catch(() => '(no widget)');
      const panel = await page.textContent('#raw-result', { timeout: 2000 }).catch(() => '');
      throw new Error(`${e.message.split('\n')[0]}; the widget shows ${JSON.stringify(shown.slice(0, 300))}; `
        + `the result panel ${JSON.stringify(panel.slice(0, 300))}`);
    }
    summary.timings_ms.widget_shown = Date.now() - t;
    if (opts.count) summary.checks.count = await widget.locator(opts.count).count();
    summary.checks.widget_text = (await widget.locator('body').innerText()).slice(0, 2000);
    // One more beat after the widget showed, then what the page held.
    await page.waitForTimeout(200);
    summary.checks.page_stall_ms = Math.round(await page.evaluate(() => Math.max(
      window.__heartbeat.max, performance.now() - window.__heartbeat.last)));
    summary.checks.result_panel_chars = await page.evaluate(() => document.getElementById('raw-result').textContent.length);
    summary.checks.result_panel_head = (await page.textContent('#raw-result')).slice(0, 300);
    summary.checks.result_panel_note = await page.evaluate(() => {
      const note = document.getElementById('result-note');
      return note && !note.hidden ? note.textContent : null;
    });
    summary.checks.bridge_log_chars = await page.$$eval('#bridge-log li',
      (lis) => lis.reduce((n, li) => n + li.textContent.length + (li.title || '').length, 0));
    summary.checks.bridge_log_errors = await page.$$eval('#bridge-log li[data-kind="error"]',
      (lis) => lis.map((li) => li.textContent.slice(0, 1000)));
  });
}

// What the sign-in panel shows.
async function panel(page) {
  return {
    title: await page.textContent('#auth-title'),
    message: await page.textContent('#auth-message'),
    sign_in_button: await page.isVisible('#sign-in'),
    token_form: await page.isVisible('#token-form'),
    connection: await page.textContent('#connection'),
    tools: await page.$$eval('#tool-list button[data-tool]', (bs) => bs.length),
    tools_empty: await page.textContent('#tools-empty'),
  };
}

// The tool names listed now.
function toolsListed(page) {
  return page.$$eval('#tool-list button[data-tool]', (bs) => bs.map((b) => b.dataset.tool));
}

// Sign in from the panel shown now: click Sign in, answer the consent page and the provider's
// login form, until the page is back at /preview/ with tools listed (or shows why not).
async function signInHere(page, label) {
  const origin = new URL(opts.url).origin;
  const seen = { authorize: null, callback: null, visited: [] };
  const onRequest = (r) => {
    if (!r.isNavigationRequest()) return;
    const u = new URL(r.url());
    seen.visited.push(u.origin + u.pathname);
    if (u.pathname.endsWith('/oauth/authorize') && r.method() === 'GET' && !seen.authorize) {
      seen.authorize = { origin: u.origin, params: Object.fromEntries(u.searchParams) };
    }
    if (u.origin === origin && u.pathname === '/preview/callback') seen.callback = [...u.searchParams.keys()];
  };
  page.on('request', onRequest);
  const failed = async () => {
    try { return (await page.isVisible('#auth-error')) ? await page.textContent('#auth-error') : null; } catch { return null; }
  };
  const done = async () => {
    try {
      const u = new URL(page.url());
      if (u.origin !== origin || u.pathname !== '/preview/') return false;
      if (await failed()) return true;
      return (await page.locator('#tool-list button[data-tool]').count()) > 0;
    } catch {
      return false;
    }
  };
  await page.click('#sign-in');
  const answered = await answerSignIn(page, {
    login: opts.signIn, password: PASSWORD, deadline: Date.now() + left(60000), done,
  });
  page.off('request', onRequest);
  const error = await failed();
  if (error) throw new Error(`the page says: ${error}`);
  const result = {
    consent: answered.consent ? answered.consent.heading : null,
    login_form: answered.login_form,
    authorize: seen.authorize,
    callback_params: seen.callback,
    visited: seen.visited,
    url: page.url(),
    account: (await page.textContent('#account-name')).trim(),
    account_title: await page.getAttribute('#account-name', 'title'),
    panel_visible: await page.isVisible('#auth-panel'),
    tools: await toolsListed(page),
  };
  summary.checks[label] = result;
  return result;
}

// What the page keeps in the browser: keys, and whether a token is anywhere but sessionStorage.
function storage(page) {
  return page.evaluate(() => {
    const session = Object.keys(sessionStorage);
    const tokens = session.filter((k) => k.includes('token ')).map((k) => JSON.parse(sessionStorage.getItem(k)));
    const local = Object.keys(localStorage);
    const localText = local.map((k) => k + ' ' + localStorage.getItem(k)).join('\n');
    return {
      session_keys: session,
      local_keys: local,
      tokens: tokens.map((t) => ({ how: t.how, has_refresh: typeof t.refresh_token === 'string', client_id: t.client_id ?? null })),
      token_in_local: tokens.some((t) => localText.includes(t.access_token) || (t.refresh_token && localText.includes(t.refresh_token))),
      token_in_url: tokens.some((t) => location.href.includes(t.access_token)),
      url: location.href,
    };
  });
}

// Calls the tool `name` of the mount shown (no arguments) from the form: the first text
// of its result, from the raw result panel.
async function callText(page, name) {
  await page.click(`#tool-list button[data-tool="${name}"]`);
  await page.evaluate(() => { document.getElementById('raw-result').textContent = ''; });
  await page.click('#call-button');
  await page.waitForFunction(() => /"result"|"error"|\(failed\)|sign in/.test(
    document.getElementById('raw-result').textContent + document.getElementById('result-state').textContent),
  null, { timeout: left(30000), polling: 100 });
  const raw = await page.textContent('#raw-result');
  let answer;
  try { answer = JSON.parse(raw); } catch { throw new Error(`${name}: the result panel shows ${raw.slice(0, 300)}`); }
  if (!answer.result) throw new Error(`${name}: ${raw.slice(0, 300)}`);
  return answer.result.content?.[0]?.text ?? null;
}

// --sign-in: the whole sign-in in the page, then what a signed-in user does.
async function signInFlow(page) {
  await step('open /preview: the sign-in panel', async () => {
    const response = await page.goto(opts.url, { timeout: left(20000), waitUntil: 'load' });
    summary.checks.page_status = response.status();
    summary.checks.page_csp = response.headers()['content-security-policy'] ?? null;
    await page.locator('#sign-in').waitFor({ state: 'visible', timeout: left(20000) });
    summary.checks.panel = await panel(page);
  });
  await step(`sign in as ${opts.signIn}`, () => signInHere(page, 'first'));
  await step('what the page keeps', async () => { summary.checks.storage = await storage(page); });
  if (opts.call) await callAndSee(page);
  if (opts.whoami) {
    await step(`choose ${opts.whoami} and sign in there`, async () => {
      const value = await page.$$eval('#mount option', (os, path) => {
        const o = os.find((x) => x.textContent.includes(path));
        return o ? o.value : null;
      }, opts.whoami);
      if (value === null) throw new Error(`no mount labelled with ${opts.whoami}`);
      await page.selectOption('#mount', value);
      await page.locator('#sign-in').waitFor({ state: 'visible', timeout: left(20000) });
      await signInHere(page, 'second');
    });
    await step('call whoami', async () => { summary.checks.whoami = await callText(page, 'whoami'); });
    if (opts.expireWait) {
      await step(`${opts.expireWait} s later (the access token expired): whoami again`, async () => {
        await page.waitForTimeout(Number(opts.expireWait) * 1000);
        summary.checks.whoami_again = await callText(page, 'whoami');
        summary.checks.refreshed = await page.$$eval('#bridge-log li', (lis) => lis.some((li) => li.textContent.includes('refreshed')));
        summary.checks.account_after_refresh = (await page.textContent('#account-name')).trim();
      });
    }
  }
  if (opts.signOut) {
    await step('sign out', async () => {
      await page.click('#sign-out');
      await page.locator('#sign-in').waitFor({ state: 'visible', timeout: left(20000) });
      summary.checks.signed_out = {
        panel: await panel(page),
        account_visible: await page.isVisible('#account'),
        storage: await storage(page),
        log: await page.$$eval('#bridge-log li', (lis) => lis.map((li) => li.textContent).filter((t) => /sign-out/.test(t))),
      };
    });
  }
  await endClean(page);
}

// --forged-callbacks: answers the page did not ask for, at its redirect URI.
async function forgedCallbacks(page) {
  const origin = new URL(opts.url).origin;
  // The sign-in is left under way: the authorization endpoint is never reached.
  await page.route((u) => u.pathname.endsWith('/oauth/authorize'), (route) => route.fulfill({
    status: 200, contentType: 'text/html', body: '<!doctype html><p>The authorization endpoint (not reached).</p>',
  }));
  // Every code the page sends to a token endpoint.
  const redeemed = [];
  page.on('request', (r) => {
    const body = r.postData() ?? '';
    if (r.method() === 'POST' && /(^|&)code=/.test(body)) redeemed.push(body);
  });
  const results = {};
  let lastQuery = null;
  const attempt = async (name, query) => {
    await step(`a forged answer: ${name}`, async () => {
      const wait = left(20000);
      await page.goto(opts.url, { timeout: wait, waitUntil: 'load' });
      await page.locator('#sign-in').waitFor({ state: 'visible', timeout: wait });
      await page.click('#sign-in');
      await page.waitForURL((u) => u.pathname.endsWith('/oauth/authorize'), { timeout: wait });
      const pending = await page.evaluate(() => JSON.parse(sessionStorage.getItem('mcp-ui-gateway.preview.sign-in')));
      lastQuery = new URLSearchParams(query(pending)).toString();
      await page.goto(`${origin}/preview/callback?${lastQuery}`, { timeout: wait, waitUntil: 'load' });
      await page.locator('#auth-error').waitFor({ state: 'visible', timeout: wait });
      results[name] = {
        error: await page.textContent('#auth-error'),
        url: page.url(),
        storage: await storage(page),
      };
    });
  };
  await attempt('another state', (p) => ({ code: 'forged-code', state: 'forged', iss: p.issuer }));
  await attempt('another issuer', (p) => ({ code: 'forged-code', state: p.state, iss: 'http://127.0.0.1:9' }));
  await attempt('no issuer', (p) => ({ code: 'forged-code', state: p.state }));
  await attempt('an error', (p) => ({ error: 'access_denied', error_description: 'the user said no', state: p.state, iss: p.issuer }));
  await step('the last answer again, nothing under way', async () => {
    await page.goto(`${origin}/preview/callback?${lastQuery}`, { timeout: left(20000), waitUntil: 'load' });
    await page.locator('#side-panel li[data-kind="error"]').waitFor({ timeout: left(20000) });
    results['nothing under way'] = {
      error: await page.textContent('#side-panel li[data-kind="error"] pre'),
      url: page.url(),
      storage: await storage(page),
    };
  });
  summary.checks.callbacks = results;
  summary.checks.codes_sent = redeemed;
  await endClean(page);
}

// --paste: a token pasted in (after a wrong one, with --paste-bad).
async function pasteFlow(page) {
  await step('open /preview: the token panel', async () => {
    const response = await page.goto(opts.url, { timeout: left(20000), waitUntil: 'load' });
    summary.checks.page_status = response.status();
    await page.locator('#token-form').waitFor({ state: 'visible', timeout: left(20000) });
    // What the panel learns by asking (the metadata a challenge named) is in.
    await page.waitForLoadState('networkidle', { timeout: left(10000) });
    summary.checks.panel = await panel(page);
    summary.checks.token_hint = await page.textContent('#token-hint');
  });
  if (opts.pasteBad) {
    await step('paste a wrong token', async () => {
      await page.fill('#token-input', opts.pasteBad);
      await page.click('#token-use');
      await page.locator('#auth-error').waitFor({ state: 'visible', timeout: left(20000) });
      summary.checks.bad_token = {
        error: await page.textContent('#auth-error'),
        panel: await panel(page),
        account_visible: await page.isVisible('#account'),
        storage: await storage(page),
      };
    });
  }
  await step('paste the token', async () => {
    await page.fill('#token-input', opts.paste);
    await page.click('#token-use');
    await page.locator('#tool-list button[data-tool]').first().waitFor({ timeout: left(30000) });
    summary.checks.pasted = {
      account: (await page.textContent('#account-name')).trim(),
      panel_visible: await page.isVisible('#auth-panel'),
      tools: await toolsListed(page),
      connection: await page.textContent('#connection'),
      storage: await storage(page),
    };
  });
  if (opts.call) await callAndSee(page);
  await endClean(page);
}

main().then(() => finish(true), (e) => finish(false, e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : String(e)));

// --hosts: the widget rendered as each host, and what the page says each host sees.
async function hostsFlow(page) {
  const table = () => page.$$eval('#hosts-table tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [
    tr.dataset.row, Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.dataset.host, td.textContent]))])));
  const frameOf = async () => (await page.$('#widget-host iframe')).contentFrame();
  const rootVar = (frame) => frame.evaluate(() =>
    getComputedStyle(document.documentElement).getPropertyValue('--color-background-primary').trim());
  await step('open /preview', async () => {
    await page.goto(opts.url, { timeout: left(20000), waitUntil: 'load' });
    await page.locator('#tool-list button[data-tool="list_tasks"]').waitFor({ timeout: left(30000) });
    summary.checks.app_only_badges = await page.$$eval('#tool-list button[data-tool]', (bs) => bs
      .filter((b) => [...b.querySelectorAll('.badge')].some((x) => x.textContent === 'app only')).map((b) => b.dataset.tool));
    summary.checks.table_before = await table();
    summary.checks.hosts = await page.evaluate(() => window.__previewHosts);
  });
  await step('call list_tasks (the built-in table)', async () => {
    await page.click('#tool-list button[data-tool="list_tasks"]');
    await page.click('#call-button');
    await page.frameLocator('#widget-host iframe').locator('table tbody tr').first().waitFor({ timeout: left(30000) });
  });
  summary.checks.as = {};
  for (const host of ['chatgpt', 'claude', 'apps']) {
    await step(`render it as ${host}`, async () => {
      await page.selectOption('#preview-host', host);
      await page.locator(`#widget-host[data-host="${host}"] iframe[data-host="${host}"]`).waitFor({ timeout: left(20000) });
      await page.frameLocator('#widget-host iframe').locator('table tbody tr').first().waitFor({ timeout: left(30000) });
      const frame = await frameOf();
      const styles = summary.checks.hosts[host].styles;
      const want = styles ? styles.light['--color-background-primary'] : '';
      await frame.waitForFunction((w) => getComputedStyle(document.documentElement)
        .getPropertyValue('--color-background-primary').trim() === w, want, { timeout: left(10000), polling: 100 }).catch(() => {});
      await page.waitForFunction(() => window.__preview.view && window.__preview.view.reportedHeight !== null, null,
        { timeout: left(10000), polling: 100 });
      summary.checks.as[host] = {
        frame_host: await page.getAttribute('#widget-host iframe', 'data-host'),
        background: await rootVar(frame),
        frame_height: await page.$eval('#widget-host iframe', (f) => f.getBoundingClientRect().height),
        table: await table(),
        note: await page.textContent('#host-note'),
      };
    });
  }
  await step('as Claude, a widget taller than 500 px is cut at 500', async () => {
    await page.selectOption('#preview-host', 'claude');
    await page.locator('#widget-host iframe[data-host="claude"]').waitFor({ timeout: left(20000) });
    await page.frameLocator('#widget-host iframe').locator('table tbody tr').first().waitFor({ timeout: left(30000) });
    const frame = await frameOf();
    await frame.evaluate(() => {
      const tall = document.createElement('div');
      tall.style.height = '900px';
      document.body.appendChild(tall);
    });
    await page.waitForFunction(() => window.__preview.view.reportedHeight > 900, null, { timeout: left(10000), polling: 100 });
    summary.checks.claude_tall = {
      reported: await page.evaluate(() => window.__preview.view.reportedHeight),
      frame_height: await page.$eval('#widget-host iframe', (f) => f.getBoundingClientRect().height),
      cell: (await table()).height.claude,
      flagged: await page.$$eval('#hosts-table tr[data-row="height"] td[data-host="claude"] .over', (x) => x.length),
    };
  });
  await step('complete_task {"id": 1} as ChatGPT (the window.openai widget)', async () => {
    await page.selectOption('#preview-host', 'chatgpt');
    await page.click('#tool-list button[data-tool="complete_task"]');
    await page.fill('#arg-id', '1');
    await page.click('#call-button');
    const widget = page.frameLocator('#widget-host iframe');
    await widget.locator('#globals', { hasText: 'input={"id":1}' }).waitFor({ timeout: left(30000) });
    const frame = await frameOf();
    summary.checks.openai_as_chatgpt = {
      first_input: await widget.locator('#first-input').textContent(),
      globals: await widget.locator('#globals').textContent(),
      background: await rootVar(frame),
      frame_host: await page.getAttribute('#widget-host iframe', 'data-host'),
    };
  });
  await endClean(page);
}
