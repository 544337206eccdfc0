#!/usr/bin/env node
// A real OpenID provider (panva's `oidc-provider`, pinned in package.json) for the tests of
// the gateway as an OAuth 2.1 resource server: JWT access tokens (RFC 9068) checked against
// the JWKS found by OIDC discovery, opaque tokens checked by introspection (RFC 7662).
//
//   node tests/peers/oidc_provider.mjs [--scopes "tools:read tools:call notes:write admin"]
//                                      [--port 0]
//
// Listens on 127.0.0.1 (port 0: an ephemeral one); the issuer is `http://127.0.0.1:PORT`
// (no trailing slash; oidc-provider accepts an http issuer). Prints one line
// `READY {"issuer":…,"discovery":…,"jwks_uri":…,"token_endpoint":…,…,"kids":[…]}` on
// stdout once listening (oidc-provider's own NOTICE lines may come before it).
//
// Resources (RFC 8707 `resource`): any `http://127.0.0.1[:PORT]/…` URL is a resource server
// (the gateway's mount URLs), offering the scopes of --scopes. The token's `aud` is the
// resource exactly as sent. By the resource URL's path segments:
//   - a segment `opaque` (e.g. `/opaque/mcp`): opaque access tokens (introspect them);
//   - a segment `es256` (e.g. `/es256/mcp`): JWT access tokens signed with the EC key (ES256);
//   - otherwise: JWT access tokens signed with the RSA key (RS256).
// JWT access tokens have the header `typ: at+jwt` and the claims jti, sub (the client id for
// client_credentials), iat, exp, scope, client_id, iss, aud. A requested scope outside the
// list is dropped from the token, not refused (oidc-provider's behaviour).
//
// Clients (both client_secret_basic and client_secret_post work for each):
//   - `test-client` / `test-secret`: grant client_credentials (tokens live 1 h);
//   - `short-lived` / `short-lived-secret`: the same, tokens live 2 s;
//   - `gateway` / `gateway-secret`: no grant; may introspect (and revoke) any token. Other
//     clients may introspect only their own tokens (introspection says `active: false`).
//   - with --login-client ID:SECRET:REDIRECT_URI, that confidential client for the
//     authorization code flow (the gateway's own client when it delegates logins here);
//   - any client registered by dynamic client registration (`registration_endpoint`, open),
//     for the authorization code flow with PKCE (always required); the interaction at
//     `/interaction/:uid` approves at once: login as `test-user`, every scope consented.
//     With --login-form the login is a page a browser fills in instead: a form (fields
//     `login` and `password`, button "Sign in") posted to `/interaction/:uid/login`; any
//     login name is accepted with the password `correct horse` and becomes the subject;
//     another password shows the form again with "Wrong password". Consent stays automatic.
// Only opaque tokens can be introspected or revoked: oidc-provider answers
// `400 unsupported_token_type` for a JWT.
//
// Keys: one RSA (RS256) and one EC P-256 (ES256) signing key, generated at start; kid = the
// key's RFC 7638 thumbprint. Test-only endpoints (no auth; loopback only):
//   POST /admin/rotate      new keys replace the old ones (gone from the JWKS); the provider
//                           instance is rebuilt behind the same listener (oidc-provider reads
//                           its keys once); issued opaque tokens, grants, sessions and
//                           registered clients stay valid. Answers {"kids":[…],"previous":[…]}.
//   GET  /admin/foreign-token?resource=URL[&scope=a b][&kid=KID][&client_id=ID][&ttl=S]
//                           a JWT shaped like a real access token for that resource (same
//                           header and claims, this issuer) signed by a key NOT in the JWKS;
//                           `kid` makes it name a real key id (its algorithm is that key's),
//                           otherwise it names the foreign key's own thumbprint.
//                           Answers {"access_token":…,"kid":…,"alg":…}.
//   POST /admin/verify      body: the token (or `token=…`); verifies it with jose against
//                           the current JWKS, issuer and typ at+jwt. Answers
//                           {"valid":true,"header":…,"payload":…} or {"valid":false,"error":…}.
//   POST /admin/mint        body: {"header":{…},"claims":{…}} (JSON); a JWT of exactly those
//                           claims signed by the provider's CURRENT key for `header.alg`
//                           (RS256 unless named; ES256 takes the EC key), the header as
//                           given (`kid` defaults to that key's id, `typ` is left out unless
//                           given): what the issuer would sign, for checks no token it
//                           issues can reach (another `typ`, array claims). With an HMAC
//                           `alg` (HS256…), the key confusion attack instead: an HMAC
//                           keyed with the text of the published key set. Answers
//                           {"access_token":…,"kid":…,"alg":…}.
//   GET  /admin/counts      what the provider was asked: {"introspections":N,"most_at_once":M}
//                           (introspection requests received, and most in progress at once).
//   POST /admin/slow?introspection_ms=MS
//                           every introspection answer waits MS first (0: none); answers
//                           {"introspection_ms":MS}.

import * as crypto from 'node:crypto';
import * as http from 'node:http';

import * as jose from 'jose';
import Provider, { errors } from 'oidc-provider';
// The package's own in-memory adapter (no `exports` map, so the module is reachable), over one
// store shared by every provider instance: oidc-provider 9 gives each instance a fresh store
// of its own, so a rotation (a new instance) would otherwise forget every issued token.
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';

function flag(name, fallback) {
    const i = process.argv.indexOf(name);
    if (i < 0) return fallback;
    if (i + 1 >= process.argv.length) {
        console.error(`oidc_provider: ${name} needs a value`);
        process.exit(2);
    }
    return process.argv[i + 1];
}

const SCOPES = flag('--scopes', 'tools:read tools:call notes:write admin').split(/\s+/).filter(Boolean);
const PORT = Number(flag('--port', '0'));
// A confidential client for the authorization code flow with a fixed redirect URI (the
// gateway's own client when it is an authorization server delegating the login here):
// `--login-client ID:SECRET:REDIRECT_URI` (client_secret_basic or client_secret_post).
const LOGIN_CLIENT = (() => {
    const spec = flag('--login-client', '');
    if (!spec) return null;
    const [id, secret, ...rest] = spec.split(':');
    return { id, secret, redirect: rest.join(':') };
})();
// A login page a browser fills in (see the header), instead of logging in at once.
const LOGIN_FORM = process.argv.includes('--login-form');
const PASSWORD = 'correct horse';
const HOUR = 60 * 60;
const SHORT_TTL = 2;
const CLIENTS = {
    test: { id: 'test-client', secret: 'test-secret' },
    short: { id: 'short-lived', secret: 'short-lived-secret' },
    introspector: { id: 'gateway', secret: 'gateway-secret' }
};
const ACCOUNT = 'test-user';

// --- keys ---------------------------------------------------------------------------------
async function signingKey(alg) {
    const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
    const jwk = await jose.exportJWK(privateKey);
    jwk.kid = await jose.calculateJwkThumbprint(jwk);
    jwk.alg = alg;
    jwk.use = 'sig';
    return jwk;
}

async function keyPair() {
    return [await signingKey('RS256'), await signingKey('ES256')];
}

const publicJwk = ({ d, p, q, dp, dq, qi, ...pub }) => pub;

let keys = await keyPair();
// Never published: what /admin/foreign-token signs with.
const foreign = { RS256: await signingKey('RS256'), ES256: await signingKey('ES256') };

// --- the provider --------------------------------------------------------------------------
function loopbackResource(indicator) {
    const url = URL.parse(indicator);
    return url !== null && url.protocol === 'http:' && url.hostname === '127.0.0.1' ? url : null;
}

function resourceServerInfo(indicator, clientId) {
    const url = loopbackResource(indicator);
    if (!url) return null;
    const segments = url.pathname.split('/');
    const info = {
        scope: SCOPES.join(' '),
        accessTokenTTL: clientId === CLIENTS.short.id ? SHORT_TTL : HOUR
    };
    if (segments.includes('opaque')) {
        info.accessTokenFormat = 'opaque';
    } else {
        info.accessTokenFormat = 'jwt';
        info.jwt = { sign: { alg: segments.includes('es256') ? 'ES256' : 'RS256' } };
    }
    return info;
}

function tokenTTL(fallback) {
    return (_ctx, token, client) =>
        token.resourceServer?.accessTokenTTL ?? (client?.clientId === CLIENTS.short.id ? SHORT_TTL : fallback);
}

// What MemoryAdapter needs of a store (get, set with maxAge in ms, delete), unbounded (the
// package's default is an LRU of 1000 entries, which a load test would overflow).
const entries = new Map();
const store = {
    get(key) {
        const entry = entries.get(key);
        if (entry && entry.expiresAt <= Date.now()) {
            entries.delete(key);
            return undefined;
        }
        return entry?.value;
    },
    set(key, value, options) {
        const expiresAt = options?.maxAge === undefined ? Infinity : Date.now() + options.maxAge;
        entries.set(key, { value, expiresAt });
    },
    delete(key) {
        entries.delete(key);
    }
};

// Cookies survive a rotation (the rebuilt provider signs them with the same keys).
const cookieKeys = [crypto.randomBytes(32).toString('base64url')];

function configuration() {
    return {
        jwks: { keys: keys.map(k => ({ ...k })) },
        // The resource scopes are the authorization server's too: an MCP client registering
        // by DCR names the scope it was challenged with (`scope` of RFC 7591), and
        // oidc-provider refuses a registration naming a scope outside this list.
        scopes: ['openid', 'offline_access', ...SCOPES],
        adapter: model => new MemoryAdapter(model, store),
        clients: [
            {
                client_id: CLIENTS.test.id,
                client_secret: CLIENTS.test.secret,
                grant_types: ['client_credentials'],
                response_types: [],
                redirect_uris: []
            },
            {
                client_id: CLIENTS.short.id,
                client_secret: CLIENTS.short.secret,
                grant_types: ['client_credentials'],
                response_types: [],
                redirect_uris: []
            },
            {
                client_id: CLIENTS.introspector.id,
                client_secret: CLIENTS.introspector.secret,
                grant_types: [],
                response_types: [],
                redirect_uris: []
            },
            ...(LOGIN_CLIENT ? [{
                client_id: LOGIN_CLIENT.id,
                client_secret: LOGIN_CLIENT.secret,
                grant_types: ['authorization_code', 'refresh_token'],
                response_types: ['code'],
                redirect_uris: [LOGIN_CLIENT.redirect]
            }] : [])
        ],
        cookies: { keys: cookieKeys },
        pkce: { required: () => true },
        findAccount: (_ctx, accountId) => ({ accountId, claims: () => ({ sub: accountId }) }),
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        ttl: {
            AccessToken: tokenTTL(HOUR),
            ClientCredentials: tokenTTL(HOUR),
            AuthorizationCode: 60,
            IdToken: HOUR,
            RefreshToken: 24 * HOUR,
            Interaction: HOUR,
            Session: 24 * HOUR,
            Grant: 24 * HOUR
        },
        features: {
            devInteractions: { enabled: false },
            clientCredentials: { enabled: true },
            registration: { enabled: true },
            revocation: {
                enabled: true,
                allowedPolicy: async (_ctx, client, token) =>
                    client.clientId === CLIENTS.introspector.id || token.clientId === client.clientId
            },
            introspection: {
                enabled: true,
                // The default lets every confidential client introspect every token; here only
                // the gateway may introspect others' tokens.
                allowedPolicy: async (_ctx, client, token) =>
                    client.clientId === CLIENTS.introspector.id || token.clientId === client.clientId
            },
            resourceIndicators: {
                enabled: true,
                defaultResource: async (_ctx, _client, oneOf) => oneOf,
                // A token request without `resource` after an authorization that named one
                // gets a token for that resource (what an MCP client expects).
                useGrantedResource: async () => true,
                getResourceServerInfo: async (_ctx, indicator, client) => {
                    const info = resourceServerInfo(indicator, client?.clientId);
                    if (!info) {
                        throw new errors.InvalidTarget(`not a loopback http resource: ${indicator}`);
                    }
                    return info;
                }
            }
        }
    };
}

function buildProvider(issuer) {
    const provider = new Provider(issuer, configuration());
    provider.on('server_error', (_ctx, err) => console.error('oidc_provider: server_error', err));
    return { provider, handle: provider.callback() };
}

// --- test-only endpoints --------------------------------------------------------------------
function send(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(text);
}

async function readBody(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    return Buffer.concat(chunks).toString('utf8');
}

// A jti like oidc-provider's own (nanoid, 43 characters).
function tokenId() {
    const alphabet = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';
    return Array.from(crypto.randomBytes(43), b => alphabet[b & 63]).join('');
}

async function foreignToken(issuer, query) {
    const resource = query.get('resource');
    if (!resource) throw new Error('resource is required');
    const kid = query.get('kid');
    const claimed = kid ? keys.find(k => k.kid === kid) : undefined;
    const alg = claimed?.alg ?? query.get('alg') ?? 'RS256';
    const signer = foreign[alg];
    if (!signer) throw new Error(`no foreign key for ${alg}`);
    const clientId = query.get('client_id') ?? CLIENTS.test.id;
    const now = Math.floor(Date.now() / 1000);
    const scope = (query.get('scope') ?? '').split(/\s+/).filter(Boolean).join(' ');
    // The claims in the order oidc-provider writes them.
    const payload = {
        jti: tokenId(),
        sub: clientId,
        iat: now,
        exp: now + Number(query.get('ttl') ?? HOUR),
        ...(scope ? { scope } : {}),
        client_id: clientId,
        iss: issuer,
        aud: resource
    };
    const header = { alg, typ: 'at+jwt', kid: kid ?? signer.kid };
    const token = await new jose.SignJWT(payload)
        .setProtectedHeader(header)
        .sign(await jose.importJWK(signer, alg));
    return { access_token: token, kid: header.kid, alg };
}

// A JWT of the given header and claims, signed with the current key of its algorithm.
async function mint(body) {
    const { header = {}, claims = {} } = JSON.parse(body);
    const alg = header.alg ?? 'RS256';
    if (/^HS/.test(alg)) {
        // The key confusion attack: an HMAC keyed with the published key set's text.
        const published = JSON.stringify({ keys: keys.map(publicJwk) });
        const protectedHeader = { ...header, alg, kid: header.kid ?? keys[0].kid };
        const token = await new jose.SignJWT(claims)
            .setProtectedHeader(protectedHeader)
            .sign(new TextEncoder().encode(published));
        return { access_token: token, kid: protectedHeader.kid, alg };
    }
    const key = keys.find(k => k.alg === alg);
    if (!key) throw new Error(`no current key for ${alg}`);
    const protectedHeader = { ...header, alg, kid: header.kid ?? key.kid };
    const token = await new jose.SignJWT(claims)
        .setProtectedHeader(protectedHeader)
        .sign(await jose.importJWK(key, alg));
    return { access_token: token, kid: protectedHeader.kid, alg };
}

// What /admin/counts reports, and the delay /admin/slow sets.
const asked = { introspections: 0, inProgress: 0, mostAtOnce: 0, delayMs: 0 };

// An introspection request, counted (and delayed as /admin/slow says) before the provider
// answers it.
async function introspection(req, res) {
    asked.introspections += 1;
    asked.inProgress += 1;
    asked.mostAtOnce = Math.max(asked.mostAtOnce, asked.inProgress);
    res.once('close', () => {
        asked.inProgress -= 1;
    });
    if (asked.delayMs > 0) await new Promise(resolve => setTimeout(resolve, asked.delayMs));
    return current.handle(req, res);
}

async function verify(issuer, body) {
    const token = body.startsWith('token=') ? new URLSearchParams(body).get('token') : body.trim();
    try {
        const jwks = jose.createLocalJWKSet({ keys: keys.map(publicJwk) });
        const { payload, protectedHeader } = await jose.jwtVerify(token, jwks, { issuer, typ: 'at+jwt' });
        return { valid: true, header: protectedHeader, payload };
    } catch (e) {
        return { valid: false, error: e.code ?? String(e), message: e.message };
    }
}

const escapeHtml = s => String(s).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);

function loginPage(res, uid, message) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(`<!doctype html><html><head><title>Sign in to the test provider</title></head><body>
<h1>Sign in to the test provider</h1>${message ? `<p id="error">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label>Login <input name="login" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button></form></body></html>`);
}

// The login form's answer: the login name, if the password is right.
async function submitLogin(provider, req, res) {
    const { uid, prompt } = await provider.interactionDetails(req, res);
    if (prompt.name !== 'login') throw new Error(`a login posted to a ${prompt.name} prompt`);
    const form = new URLSearchParams(await readBody(req));
    const login = (form.get('login') ?? '').trim();
    if (!login || form.get('password') !== PASSWORD) return loginPage(res, uid, 'Wrong password');
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
}

// The interaction: login as ACCOUNT (or by the login form), then consent to everything asked.
async function interaction(provider, req, res) {
    const { uid, prompt, grantId, session, params } = await provider.interactionDetails(req, res);
    if (prompt.name === 'login') {
        if (LOGIN_FORM) return loginPage(res, uid);
        await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT } }, { mergeWithLastSubmission: false });
        return;
    }
    if (prompt.name !== 'consent') throw new Error(`unexpected prompt ${prompt.name}`);
    const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { details } = prompt;
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scope] of Object.entries(details.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scope.join(' '));
    }
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

// --- the listener -------------------------------------------------------------------------
let current;
let issuer;

const server = http.createServer(async (req, res) => {
    try {
        const { pathname, searchParams } = new URL(req.url, issuer);
        const loopback = ['127.0.0.1', '::ffff:127.0.0.1', '::1'].includes(req.socket.remoteAddress);
        if (pathname.startsWith('/admin/') && !loopback) return send(res, 403, { error: 'loopback only' });
        if (req.method === 'POST' && pathname === '/admin/rotate') {
            const previous = keys.map(k => k.kid);
            keys = await keyPair();
            current = buildProvider(issuer);
            return send(res, 200, { kids: keys.map(k => k.kid), previous });
        }
        if (req.method === 'GET' && pathname === '/admin/foreign-token') {
            return send(res, 200, await foreignToken(issuer, searchParams));
        }
        if (req.method === 'POST' && pathname === '/admin/verify') {
            return send(res, 200, await verify(issuer, await readBody(req)));
        }
        if (req.method === 'POST' && pathname === '/admin/mint') {
            return send(res, 200, await mint(await readBody(req)));
        }
        if (req.method === 'GET' && pathname === '/admin/counts') {
            return send(res, 200, { introspections: asked.introspections, most_at_once: asked.mostAtOnce });
        }
        if (req.method === 'POST' && pathname === '/admin/slow') {
            asked.delayMs = Math.max(0, Number(searchParams.get('introspection_ms') ?? 0));
            return send(res, 200, { introspection_ms: asked.delayMs });
        }
        if (pathname === new URL(current.provider.urlFor('introspection')).pathname) {
            return await introspection(req, res);
        }
        if (req.method === 'POST' && /^\/interaction\/[^/]+\/login$/.test(pathname)) {
            return await submitLogin(current.provider, req, res);
        }
        if (req.method === 'GET' && pathname.startsWith('/interaction/')) {
            return await interaction(current.provider, req, res);
        }
        return current.handle(req, res);
    } catch (e) {
        console.error('oidc_provider:', e);
        if (!res.headersSent) send(res, 400, { error: 'invalid_request', error_description: String(e?.message ?? e) });
        else res.end();
    }
});

await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(PORT, '127.0.0.1', resolve);
});
issuer = `http://127.0.0.1:${server.address().port}`;
current = buildProvider(issuer);

const { provider } = current;
console.log(
    `READY ${JSON.stringify({
        issuer,
        discovery: `${issuer}/.well-known/openid-configuration`,
        jwks_uri: provider.urlFor('jwks'),
        token_endpoint: provider.urlFor('token'),
        introspection_endpoint: provider.urlFor('introspection'),
        revocation_endpoint: provider.urlFor('revocation'),
        registration_endpoint: provider.urlFor('registration'),
        authorization_endpoint: provider.urlFor('authorization'),
        scopes: SCOPES,
        kids: keys.map(k => k.kid),
        clients: Object.fromEntries(Object.values(CLIENTS).map(c => [c.id, c.secret]))
    })}`
);

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
