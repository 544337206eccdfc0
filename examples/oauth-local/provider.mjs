// A local OpenID provider to sign in through mcp-ui-gateway's [authorization_server] with,
// on your own machine: panva's oidc-provider with one client, the gateway's, and a login
// page that takes any user name. For trying the gateway, not for real users: keys and
// sessions live in memory and are new at every start (oidc-provider warns that its
// in-memory store is for development, which is what this is).
//
//   examples/oauth-local/run.sh [--port 9090] [--gateway http://127.0.0.1:8787]
//
// --port     where it listens, on 127.0.0.1 (0: any free port); its issuer is
//            http://127.0.0.1:PORT
// --gateway  the gateway's public_url; the client's redirect URI is
//            <gateway>/oauth/callback
// OAUTH_LOCAL_SECRET    the gateway client's secret (default: gateway-secret)
// OAUTH_LOCAL_PASSWORD  the password of every user name (default: mcp)

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
    options: {
        port: { type: 'string', default: '9090' },
        gateway: { type: 'string', default: 'http://127.0.0.1:8787' }
    }
});
const CLIENT_ID = 'gateway';
const SECRET = process.env.OAUTH_LOCAL_SECRET || 'gateway-secret';
const PASSWORD = process.env.OAUTH_LOCAL_PASSWORD || 'mcp';
const GATEWAY = args.gateway.replace(/\/+$/, '');
const REDIRECT_URI = `${GATEWAY}/oauth/callback`;

// The key the ID tokens are signed with (RS256, what clients expect by default).
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' };

function configuration() {
    return {
        clients: [{
            client_id: CLIENT_ID,
            client_secret: SECRET,
            redirect_uris: [REDIRECT_URI],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code']
        }],
        jwks: { keys: [signingKey] },
        cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
        // The user's name is the subject; it is all this provider knows of them.
        findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
        // The gateway always sends PKCE (S256); refuse an authorization request without it.
        pkce: { required: () => true },
        // A refresh token with every code, for a gateway that passes the user's token on
        // (`provider_access_token`) and refreshes it here.
        issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        features: { devInteractions: { enabled: false } }
    };
}

const escape = s => String(s).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);

function loginPage(res, uid, message = '') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(`<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head>
<body style="font-family: sans-serif; max-width: 24rem; margin: 4rem auto">
<h1>Sign in to the local provider</h1>
<p>Any user name, and the password <code>${escape(PASSWORD)}</code>.</p>
${message ? `<p style="color: #b00">${escape(message)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<p><label>User name <input name="login" autocomplete="username" autofocus required></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password"></label></p>
<button type="submit">Sign in</button>
</form></body></html>`);
}

async function form(req) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return new URLSearchParams(body);
}

// What the provider asks of the user: the login page, then a consent given at once (the
// gateway shows its own consent page to the user before sending them here).
async function interaction(provider, req, res) {
    const { uid, prompt, params, session, grantId } = await provider.interactionDetails(req, res);
    if (prompt.name === 'login' && req.method === 'GET') return loginPage(res, uid);
    if (prompt.name === 'login') {
        const answer = await form(req);
        const login = (answer.get('login') ?? '').trim();
        if (!login || answer.get('password') !== PASSWORD) return loginPage(res, uid, 'Wrong password.');
        return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    }
    const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { missingOIDCScope, missingOIDCClaims } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

let provider;
let handle;
const server = http.createServer(async (req, res) => {
    try {
        if (req.url.startsWith('/interaction/')) return await interaction(provider, req, res);
        return handle(req, res);
    } catch (e) {
        console.error(e);
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(`Sign-in stopped: ${e.message}\n`);
    }
});
await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(args.port), '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;
provider = new Provider(issuer, configuration());
provider.on('server_error', (_ctx, e) => console.error(e));
handle = provider.callback();

console.log(`Local OpenID provider listening on ${issuer}
Sign in with any user name (it becomes the user's \`sub\`) and the password: ${PASSWORD}
Its one client is the gateway's: client_id "${CLIENT_ID}", redirect URI ${REDIRECT_URI}

What the gateway's configuration needs (examples/oauth-local/gateway.toml has it):

public_url = "${GATEWAY}"

[auth]

[authorization_server.provider]
issuer = "${issuer}"
client_id = "${CLIENT_ID}"
client_secret = "${SECRET}"

Ctrl-C stops it.`);

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
