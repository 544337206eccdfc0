#!/usr/bin/env node
// An OAuth-protected MCP deployment assembled from the TypeScript SDK v1's maintained parts
// (@modelcontextprotocol/sdk 1.32.2), for the gateway's OAuth tests:
//
// - an authorization server: the SDK's `mcpAuthRouter` (RFC 8414 metadata, dynamic client
//   registration, /authorize with PKCE, /token, /revoke) over its in-memory provider
//   (`DemoInMemoryAuthProvider`, which approves every authorization at once and redirects
//   with a code, so the flow runs headless). Tokens are accepted only for the resources
//   named by --resource-a / --resource-b (RFC 8707), i.e. the gateway's mount URLs;
// - two MCP servers, A and B, each behind the SDK's `requireBearerAuth` (with
//   `expectedResource`: a token for the other resource is refused) and publishing its
//   protected-resource metadata with `mcpAuthMetadataRouter`.
//
//   node tests/peers/oauth_upstream.mjs --resource-a URL --resource-b URL
//
// Prints one line `READY {"as":URL,"a":URL,"b":URL}` when listening (all on 127.0.0.1,
// ephemeral ports). Test-only endpoints (no auth): GET <upstream>/seen lists every
// Authorization header value that upstream received; POST <as>/admin/revoke-all forgets
// every issued token (an expiry/revocation).

import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import {
    createOAuthMetadata,
    mcpAuthMetadataRouter,
    mcpAuthRouter,
    getOAuthProtectedResourceMetadataUrl
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';

function arg(name) {
    const i = process.argv.indexOf(name);
    if (i < 0 || i + 1 >= process.argv.length) {
        console.error(`oauth_upstream: missing ${name}`);
        process.exit(2);
    }
    return process.argv[i + 1];
}

const resourceA = new URL(arg('--resource-a'));
const resourceB = new URL(arg('--resource-b'));
const allowed = new Set([resourceA.href, resourceB.href]);

function listen(app) {
    return new Promise((resolve, reject) => {
        const server = app.listen(0, '127.0.0.1', err => (err ? reject(err) : resolve(server)));
    });
}

// --- authorization server ---------------------------------------------------------------
const provider = new DemoInMemoryAuthProvider(resource => resource !== undefined && allowed.has(resource.href));
const asApp = express();
asApp.post('/admin/revoke-all', (_req, res) => {
    provider.tokens.clear();
    res.json({ revoked: true });
});
const asServer = await listen(asApp);
const asUrl = new URL(`http://127.0.0.1:${asServer.address().port}/`);
asApp.use(mcpAuthRouter({ provider, issuerUrl: asUrl, scopesSupported: ['mcp:tools'] }));
// The demo provider throws a plain Error for an unknown or expired token; a resource
// server answers that with 401 invalid_token, so say so.
const verifier = {
    async verifyAccessToken(token) {
        try {
            return await provider.verifyAccessToken(token);
        } catch (e) {
            throw new InvalidTokenError(e?.message ?? 'Invalid token');
        }
    }
};
const oauthMetadata = createOAuthMetadata({ provider, issuerUrl: asUrl, scopesSupported: ['mcp:tools'] });

// --- the two protected MCP servers -------------------------------------------------------
async function upstream(label, resource) {
    const app = express();
    app.use(express.json());
    const seen = [];
    app.get('/seen', (_req, res) => res.json(seen));
    const server = await listen(app);
    const url = new URL(`http://127.0.0.1:${server.address().port}/mcp`);
    app.use((req, _res, next) => {
        if (req.headers.authorization) seen.push(req.headers.authorization);
        next();
    });
    app.use(
        mcpAuthMetadataRouter({
            oauthMetadata,
            resourceServerUrl: url,
            scopesSupported: ['mcp:tools'],
            resourceName: `OAuth test upstream ${label}`
        })
    );
    const auth = requireBearerAuth({
        verifier,
        expectedResource: resource,
        resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(url)
    });
    const handle = async (req, res) => {
        const mcp = new McpServer({ name: `oauth-upstream-${label}`, version: '1.0.0' });
        mcp.registerTool('whoami', { description: 'Who the token belongs to' }, async extra => ({
            content: [{ type: 'text', text: `upstream ${label}: client ${extra.authInfo?.clientId}` }]
        }));
        // A tool that answers with its own in-band challenge (as an upstream that already
        // speaks SEP-1489 does); the gateway rewrites its resource_metadata.
        mcp.registerTool('needs_more', { description: 'Always asks for a wider scope' }, async () => ({
            isError: true,
            content: [{ type: 'text', text: 'more access needed' }],
            _meta: {
                'mcp/www_authenticate': [
                    `Bearer resource_metadata="${getOAuthProtectedResourceMetadataUrl(url)}", error="insufficient_scope", scope="mcp:admin", error_description="Admin scope needed"`
                ]
            }
        }));
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on('close', () => {
            transport.close();
            mcp.close();
        });
        await mcp.connect(transport);
        await transport.handleRequest(req, res, req.body);
    };
    app.post('/mcp', auth, handle);
    app.get('/mcp', auth, (_req, res) => res.status(405).set('Allow', 'POST').end());
    app.delete('/mcp', auth, (_req, res) => res.status(405).set('Allow', 'POST').end());
    return url;
}

const a = await upstream('A', resourceA);
const b = await upstream('B', resourceB);
console.log(`READY ${JSON.stringify({ as: asUrl.href, a: a.href, b: b.href })}`);

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
