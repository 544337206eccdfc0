#!/usr/bin/env node
// The TypeScript SDK v1 client's OAuth flow (@modelcontextprotocol/sdk 1.32.2), headless:
// StreamableHTTPClientTransport with an in-memory OAuthClientProvider. The first connect
// gets the 401; the SDK's auth() follows the challenge to the protected-resource metadata,
// then the authorization server's metadata, registers a client (DCR) and asks to be
// redirected to /authorize. Instead of a browser the script fetches that URL itself, takes
// the code from the redirect, finishes the exchange (PKCE) and connects again, then lists
// tools and calls --call (default whoami) with the JSON object --args (default {}).
// The "browser" follows the authorization server's own redirects (a login or consent
// interaction that approves at once, as oidc_provider.mjs has), keeping its cookies, up to
// the redirect to the redirect URI, which it does not follow; it checks the `state` there.
//
//   node tests/peers/oauth_client.mjs URL [--call TOOL] [--args JSON] [--timeout S]
//        [--browser] [--refresh-after S]
//
// With --browser a real browser signs in instead (browser_sign_in.mjs: headless Chromium
// answers the authorization server's consent page and the identity provider's login form),
// and the code is taken from the URL it reaches the redirect URI with. With --refresh-after
// S the tool is called again S seconds after the first call, on the same connection: once
// the access token has expired the server answers 401 and the SDK refreshes it
// (`refresh_token` grant) before calling again (`second_call`, `grants`: the grant_type of
// every token request, in order).
//
// Prints one JSON object on stdout: every HTTP exchange the SDK made and the authorization
// request's (`exchanges`: method, url, status), the redirects followed
// (`authorization_hops`: url, status, location), the protected-resource metadata document
// it read (`prm`), the registered client (`client`: client_id, token_endpoint_auth_method),
// the access token it obtained (`access_token`, for the test to replay), the token response's
// other fields (`token`: token_type, scope, expires_in, refresh_token present), the listed
// tools, the revision the session ended on (`protocol_version`) and the tool result (`call`).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.argv[2]);
const opt = (name, dflt) => {
    const i = process.argv.indexOf(name);
    return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
};
const tool = opt('--call', 'whoami');
const toolArgs = JSON.parse(opt('--args', '{}'));
const timeoutS = Number(opt('--timeout', '40'));
const inBrowser = process.argv.includes('--browser');
const refreshAfterS = Number(opt('--refresh-after', '0'));
setTimeout(() => {
    console.error(`oauth_client: FAILED: timed out after ${timeoutS} s`);
    process.exit(1);
}, timeoutS * 1000).unref();

const exchanges = [];
const hops = [];
const grants = [];
let prm = null;
let browser = null;
const tracingFetch = async (input, init) => {
    const res = await fetch(input, init);
    const u = String(input instanceof Request ? input.url : input);
    if (typeof init?.body === 'string' || init?.body instanceof URLSearchParams) {
        const grant = new URLSearchParams(String(init.body)).get('grant_type');
        if (grant) grants.push(grant);
    }
    exchanges.push({ method: init?.method ?? 'GET', url: u, status: res.status });
    if (u.includes('/.well-known/oauth-protected-resource') && res.ok) {
        prm = await res.clone().json();
    }
    return res;
};

class MemoryProvider {
    constructor() {
        this.authorizationUrl = undefined;
    }
    get redirectUrl() {
        return 'http://127.0.0.1:9/callback';
    }
    get clientMetadata() {
        return {
            client_name: 'mcp-ui-gateway oauth test',
            redirect_uris: [this.redirectUrl],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_post'
        };
    }
    clientInformation() {
        return this.client;
    }
    saveClientInformation(info) {
        this.client = info;
    }
    tokens() {
        return this.savedTokens;
    }
    saveTokens(tokens) {
        this.savedTokens = tokens;
    }
    redirectToAuthorization(authorizationUrl) {
        this.authorizationUrl = authorizationUrl;
    }
    state() {
        this.sentState = crypto.randomUUID();
        return this.sentState;
    }
    saveCodeVerifier(v) {
        this.verifier = v;
    }
    codeVerifier() {
        return this.verifier;
    }
}

try {
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: tracingFetch });
    try {
        await new Client({ name: 'oauth-test', version: '1.0.0' }).connect(first);
        throw new Error('connected without authorization: the upstream is not protected');
    } catch (e) {
        if (!(e instanceof UnauthorizedError)) throw e;
    }
    if (!provider.authorizationUrl) throw new Error('the SDK never asked to redirect to /authorize');
    // The "browser": the authorization server approves at once (perhaps through its own
    // login and consent pages, redirecting to each and keeping a cookie) and redirects to the
    // redirect URI, which is not followed: the code is taken from that Location.
    const cookies = new Map();
    let at = new URL(provider.authorizationUrl);
    let callback;
    if (inBrowser) {
        const { signIn } = await import('./browser_sign_in.mjs');
        browser = await signIn(String(provider.authorizationUrl), {
            redirectUri: provider.redirectUrl,
            timeoutMs: (timeoutS * 1000) / 2
        });
        callback = new URL(browser.callback);
    }
    for (let hop = 0; hop < 12 && !callback; hop++) {
        const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
        const r = await tracingFetch(at, { redirect: 'manual', headers: cookie ? { cookie } : {} });
        for (const c of r.headers.getSetCookie()) {
            const [pair] = c.split(';');
            const eq = pair.indexOf('=');
            cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
        }
        const location = r.headers.get('location');
        hops.push({ url: String(at), status: r.status, location });
        if (!location) throw new Error(`${at} answered ${r.status} without a redirect: ${await r.text()}`);
        at = new URL(location, at);
        if (`${at.origin}${at.pathname}` === provider.redirectUrl) callback = at;
    }
    if (!callback) throw new Error(`no redirect to ${provider.redirectUrl} after ${hops.length} hops`);
    const error = callback.searchParams.get('error');
    if (error) throw new Error(`the authorization server redirected with an error: ${callback}`);
    if (callback.searchParams.get('state') !== provider.sentState) {
        throw new Error(`state mismatch: sent ${provider.sentState}, got back ${callback}`);
    }
    const code = callback.searchParams.get('code');
    if (!code) throw new Error(`no code in the redirect ${callback}`);
    await first.finishAuth(code);

    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: tracingFetch });
    await client.connect(transport);
    const tools = await client.listTools();
    const call = await client.callTool({ name: tool, arguments: toolArgs });
    const firstToken = provider.tokens()?.access_token;
    let secondCall = null;
    if (refreshAfterS > 0) {
        await new Promise(r => setTimeout(r, refreshAfterS * 1000));
        secondCall = await client.callTool({ name: tool, arguments: toolArgs });
    }
    const protocolVersion = transport.protocolVersion;
    await client.close();
    const tokens = provider.tokens() ?? {};
    console.log(
        JSON.stringify({
            exchanges,
            authorization_hops: hops,
            prm,
            authorization_url: String(provider.authorizationUrl),
            client: provider.client && {
                client_id: provider.client.client_id,
                token_endpoint_auth_method: provider.client.token_endpoint_auth_method,
                has_secret: provider.client.client_secret !== undefined
            },
            access_token: tokens.access_token,
            token: {
                token_type: tokens.token_type,
                scope: tokens.scope,
                expires_in: tokens.expires_in,
                refresh_token: tokens.refresh_token !== undefined
            },
            protocol_version: protocolVersion,
            tools: tools.tools.map(t => t.name),
            call,
            browser,
            grants,
            first_access_token: firstToken,
            second_call: secondCall
        })
    );
    process.exit(0);
} catch (e) {
    console.error(`oauth_client: FAILED: ${e?.stack ?? e}`);
    console.error(JSON.stringify({ exchanges, authorization_hops: hops }));
    process.exit(1);
}
