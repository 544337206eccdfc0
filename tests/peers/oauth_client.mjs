#!/usr/bin/env node
// The TypeScript SDK v1 client's OAuth flow (@modelcontextprotocol/sdk 1.32.2), headless:
// StreamableHTTPClientTransport with an in-memory OAuthClientProvider. The first connect
// gets the 401; the SDK's auth() follows the challenge to the protected-resource metadata,
// then the authorization server's metadata, registers a client (DCR) and asks to be
// redirected to /authorize. Instead of a browser the script fetches that URL itself, takes
// the code from the redirect, finishes the exchange (PKCE) and connects again, then lists
// tools and calls --call (default whoami).
//
//   node tests/peers/oauth_client.mjs URL [--call TOOL] [--timeout S]
//
// Prints one JSON object on stdout: every HTTP exchange the SDK made (`exchanges`: method,
// url, status), the protected-resource metadata document it read (`prm`), the access token
// it obtained (`access_token`, for the test to replay) and the tool result (`call`).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.argv[2]);
const opt = (name, dflt) => {
    const i = process.argv.indexOf(name);
    return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
};
const tool = opt('--call', 'whoami');
const timeoutS = Number(opt('--timeout', '40'));
setTimeout(() => {
    console.error(`oauth_client: FAILED: timed out after ${timeoutS} s`);
    process.exit(1);
}, timeoutS * 1000).unref();

const exchanges = [];
let prm = null;
const tracingFetch = async (input, init) => {
    const res = await fetch(input, init);
    const u = String(input instanceof Request ? input.url : input);
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
    // The "browser": the demo authorization server approves at once and redirects.
    const r = await tracingFetch(provider.authorizationUrl, { redirect: 'manual' });
    const location = r.headers.get('location');
    if (!location) throw new Error(`/authorize answered ${r.status} without a redirect`);
    const code = new URL(location).searchParams.get('code');
    if (!code) throw new Error(`no code in the redirect ${location}`);
    await first.finishAuth(code);

    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: tracingFetch }));
    const tools = await client.listTools();
    const call = await client.callTool({ name: tool, arguments: {} });
    await client.close();
    console.log(
        JSON.stringify({
            exchanges,
            prm,
            authorization_url: String(provider.authorizationUrl),
            access_token: provider.tokens()?.access_token,
            tools: tools.tools.map(t => t.name),
            call
        })
    );
    process.exit(0);
} catch (e) {
    console.error(`oauth_client: FAILED: ${e?.stack ?? e}`);
    console.error(JSON.stringify({ exchanges }));
    process.exit(1);
}
