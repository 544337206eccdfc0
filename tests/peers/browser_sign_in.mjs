#!/usr/bin/env node
// A user signing in with a real browser: headless Chromium (Debian's, driven by playwright-core)
// opens an authorization URL, answers the consent page of the gateway's authorization server
// (its "Allow" or "Deny" button), fills in the identity provider's login form (oidc_provider.mjs
// --login-form: fields `login` and `password`) when one appears, and ends at the client's
// redirect URI.
//
//   node tests/peers/browser_sign_in.mjs AUTHORIZATION_URL --redirect-uri URI [--follow]
//        [--login NAME] [--password P] [--decision allow|deny] [--timeout S]
//
// Without --follow the request to the redirect URI never leaves the browser: it is answered
// with a small page and its URL is the result (for a client that takes the code from the
// URL). With --follow it goes to the client's own listener (the MCP Inspector's, say), and
// the text that listener answered is kept.
//
// Prints one JSON object on stdout and exits 0: `callback` (the URL the redirect URI was
// reached with), `visited` (every URL the page navigated to, in order), `consent` (the
// consent page's heading and text, or null when it was not shown: a remembered consent),
// `login_form` (whether the provider's form was filled in) and `final_text` (the last page's
// text). On failure: `browser_sign_in: FAILED: <reason>` with the URLs visited on stderr, exit 1.
// Also importable: `signIn(url, options)` returns the same object; `answerSignIn(page,
// options)` answers the consent page and the login form in a page already open (a browser
// the caller drives, such as tests/preview/run.mjs's) until `options.done()` says the
// sign-in is over.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

function findChromium() {
    if (process.env.CHROMIUM) return process.env.CHROMIUM;
    try {
        return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8', timeout: 5000 }).trim();
    } catch {
        throw new Error('chromium not found on PATH; run bash scripts/install-peers.sh (installs Debian\'s chromium)');
    }
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// What the page shows now: the consent form, the login form, or neither (yet).
async function whatIsShown(page) {
    try {
        if (await page.$('form button[name="decision"][value="allow"]')) return 'consent';
        if (await page.$('form input[name="password"]')) return 'login';
    } catch {
        // A navigation destroyed the document being read: look again.
    }
    return 'other';
}

async function pageText(page) {
    try {
        return (await page.evaluate(() => document.body?.innerText ?? '')).trim();
    } catch {
        return '';
    }
}

/**
 * In `page`, answer the gateway's consent page (`decision`) and fill in the provider's login
 * form (`login`, `password`) whenever one is shown, until `done()` resolves true; an error
 * page that stays, a login refused twice or `deadline` (ms since the epoch) passed throws.
 * Returns `{ consent, login_form }`: the consent page's heading and text (null when it was
 * not shown) and whether the login form was filled in.
 */
export async function answerSignIn(page, { login = 'ada', password = 'correct horse', decision = 'allow', deadline, done }) {
    const result = { consent: null, login_form: false };
    const answered = { consent: false, login: 0 };
    while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`the sign-in did not end in time (at ${page.url()})`);
        const shown = await whatIsShown(page);
        if (shown === 'consent' && !answered.consent) {
            answered.consent = true;
            result.consent = {
                heading: (await page.textContent('h1'))?.trim() ?? '',
                text: await pageText(page)
            };
            await page.click(`form button[name="decision"][value="${decision}"]`);
        } else if (shown === 'login') {
            if (++answered.login > 2) throw new Error(`the provider's login form refused us: ${await pageText(page)}`);
            result.login_form = true;
            await page.fill('input[name="login"]', login);
            await page.fill('input[name="password"]', password);
            await page.click('form button[type="submit"]');
        } else if (shown === 'other' && !(await done())) {
            // A page that is neither form and no redirect under way: an error page stays.
            const text = await pageText(page);
            if (/Sign-in stopped|error/i.test(text) && !page.url().startsWith('about:')) {
                await sleep(300);
                if (!(await done()) && (await whatIsShown(page)) === 'other' && (await pageText(page)) === text) {
                    throw new Error(`stopped at ${page.url()}: ${text.slice(0, 500)}`);
                }
            }
        }
        await sleep(100);
    }
    return result;
}

/**
 * Sign in at `url` in a fresh headless Chromium. See the header for the options and result.
 */
export async function signIn(url, options) {
    const {
        redirectUri,
        follow = false,
        login = 'ada',
        password = 'correct horse',
        decision = 'allow',
        timeoutMs = 60_000
    } = options;
    if (!redirectUri) throw new Error('signIn needs redirectUri');
    const deadline = Date.now() + timeoutMs;
    const home = mkdtempSync(join(tmpdir(), 'mcp-sign-in-'));
    const context = await chromium.launchPersistentContext(join(home, 'profile'), {
        executablePath: findChromium(),
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        env: { ...process.env, HOME: home },
        timeout: 30_000
    });
    const result = { callback: null, visited: [], consent: null, login_form: false, final_text: '' };
    try {
        const atRedirect = u => u.startsWith(redirectUri);
        if (!follow) {
            await context.route(u => atRedirect(u.href), route => {
                result.callback ??= route.request().url();
                return route.fulfill({
                    status: 200,
                    contentType: 'text/html',
                    body: '<!doctype html><p>Signed in: the application has its answer.</p>'
                });
            });
        }
        const page = context.pages()[0] ?? (await context.newPage());
        page.on('framenavigated', f => {
            if (f === page.mainFrame()) {
                result.visited.push(f.url());
                if (follow && atRedirect(f.url())) result.callback ??= f.url();
            }
        });
        page.on('request', r => {
            if (follow && r.isNavigationRequest() && atRedirect(r.url())) result.callback ??= r.url();
        });
        await page.goto(url, { timeout: Math.max(1000, deadline - Date.now()) });
        try {
            const answered = await answerSignIn(page, {
                login, password, decision, deadline, done: async () => result.callback !== null
            });
            result.consent = answered.consent;
            result.login_form = answered.login_form;
        } catch (e) {
            if (Date.now() > deadline) throw new Error(`no redirect to ${redirectUri} within ${timeoutMs} ms`);
            throw e;
        }
        if (follow) {
            await page.waitForLoadState('load', { timeout: Math.max(1000, deadline - Date.now()) }).catch(() => {});
        }
        result.final_text = (await pageText(page)).slice(0, 2000);
        return result;
    } catch (e) {
        e.visited = result.visited;
        throw e;
    } finally {
        await Promise.race([context.close(), sleep(5000)]);
        rmSync(home, { recursive: true, force: true });
    }
}

async function main() {
    const argv = process.argv.slice(2);
    const opt = (name, dflt) => {
        const i = argv.indexOf(name);
        return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
    };
    const url = argv[0];
    if (!url || url.startsWith('--')) {
        process.stderr.write('usage: browser_sign_in.mjs AUTHORIZATION_URL --redirect-uri URI [--follow] [--login NAME] [--password P] [--decision allow|deny] [--timeout S]\n');
        process.exit(2);
    }
    try {
        const result = await signIn(url, {
            redirectUri: opt('--redirect-uri'),
            follow: argv.includes('--follow'),
            login: opt('--login', 'ada'),
            password: opt('--password', 'correct horse'),
            decision: opt('--decision', 'allow'),
            timeoutMs: Number(opt('--timeout', '60')) * 1000
        });
        process.stdout.write(`${JSON.stringify(result)}\n`);
        process.exit(0);
    } catch (e) {
        process.stderr.write(`browser_sign_in: FAILED: ${e?.message ?? e}\n${JSON.stringify({ visited: e?.visited ?? [] })}\n`);
        process.exit(1);
    }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
