#!/usr/bin/env node
// Captures what a native MCP Apps server puts on the wire for its UI tool, as raw
// JSON (plain fetch, no SDK schema in between), for the gateway's parity test:
//
//   node tests/browser/capture-parity.mjs --mcp URL --tool NAME --out-prefix PREFIX
//
// writes PREFIX-tool.json     the tool object from tools/list, byte-for-byte the wire JSON
//        PREFIX-resource.json the resources/read result for the tool's _meta.ui.resourceUri
//                             (text replaced by a note with its length and sha256) and
//                             the matching resources/list entry
// Bounded: every request 15 s, the whole run 60 s. Only loopback URLs.

import { createHash } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

function usage(msg) {
  process.stderr.write(`capture-parity.mjs: ${msg}\nusage: node tests/browser/capture-parity.mjs --mcp URL --tool NAME --out-prefix PREFIX [--source TEXT]\n`);
  process.exit(2);
}
const opts = {};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  if (!['--mcp', '--tool', '--out-prefix', '--source'].includes(argv[i]) || argv[i + 1] === undefined) usage(`bad argument ${argv[i]}`);
  opts[argv[i].slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[i + 1];
}
if (!opts.mcp || !opts.tool || !opts.outPrefix) usage('--mcp, --tool and --out-prefix are required');
if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(opts.mcp).hostname)) usage('--mcp must be a loopback URL');
setTimeout(() => { process.stderr.write('capture-parity.mjs: timed out after 60 s\n'); process.exit(1); }, 60000).unref();

let session = null;
let protocolVersion = null;
let nextId = 1;

// One JSON-RPC exchange; the answer may come as JSON or as an SSE stream.
async function rpc(method, params, { notification = false } = {}) {
  const body = { jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) };
  const id = notification ? undefined : nextId++;
  if (id !== undefined) body.id = id;
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (session) headers['mcp-session-id'] = session;
  if (protocolVersion) headers['mcp-protocol-version'] = protocolVersion;
  const res = await fetch(opts.mcp, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(15000) });
  session = res.headers.get('mcp-session-id') ?? session;
  if (notification) { await res.arrayBuffer(); return null; }
  const text = await res.text();
  if (!res.ok) throw new Error(`${method}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text.split(/\r?\n\r?\n/).map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n')).filter(Boolean).map((d) => JSON.parse(d))
    : [JSON.parse(text)];
  const answer = messages.find((m) => m.id === id) ?? messages.find((m) => Array.isArray(m) && m.find((x) => x.id === id));
  if (!answer) throw new Error(`${method}: no response with id ${id} in ${text.slice(0, 300)}`);
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

const init = await rpc('initialize', {
  protocolVersion: '2025-11-25',
  capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } },
  clientInfo: { name: 'mcp-ui-gateway-parity-capture', version: '0.1.0' },
});
protocolVersion = init.protocolVersion;
await rpc('notifications/initialized', undefined, { notification: true });

const tools = [];
let cursor;
do {
  const page = await rpc('tools/list', cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
const tool = tools.find((t) => t.name === opts.tool);
if (!tool) { process.stderr.write(`capture-parity.mjs: no tool ${opts.tool} (have ${tools.map((t) => t.name).join(', ')})\n`); process.exit(1); }
const uri = tool._meta?.ui?.resourceUri ?? tool._meta?.['ui/resourceUri'];
if (!uri) { process.stderr.write(`capture-parity.mjs: ${opts.tool} has no _meta.ui.resourceUri\n`); process.exit(1); }

const read = await rpc('resources/read', { uri });
let listEntry = null;
if (init.capabilities?.resources) {
  cursor = undefined;
  do {
    const page = await rpc('resources/list', cursor ? { cursor } : {});
    listEntry = listEntry ?? page.resources.find((r) => r.uri === uri) ?? null;
    cursor = page.nextCursor;
  } while (cursor && !listEntry);
}

const elided = {
  ...read,
  contents: read.contents.map((c) => {
    const out = { ...c };
    for (const key of ['text', 'blob']) {
      if (typeof out[key] === 'string') {
        out[key] = `<elided: ${out[key].length} chars, sha256 ${createHash('sha256').update(out[key]).digest('hex')}>`;
      }
    }
    return out;
  }),
};

const source = opts.source ?? `${init.serverInfo?.name} ${init.serverInfo?.version}`;
const prefix = resolve(opts.outPrefix);
mkdirSync(dirname(prefix), { recursive: true });
writeFileSync(`${prefix}-tool.json`, JSON.stringify(tool, null, 2) + '\n');
writeFileSync(`${prefix}-resource.json`, JSON.stringify({
  $comment: `Captured from ${source} over streamable HTTP (protocol ${protocolVersion}) by tests/browser/capture-parity.mjs. resources_read is the raw resources/read result for ${uri} with the HTML elided; resources_list_entry is that URI's resources/list entry.`,
  uri,
  resources_read: elided,
  resources_list_entry: listEntry,
}, null, 2) + '\n');
process.stdout.write(JSON.stringify({ ok: true, tool: `${prefix}-tool.json`, resource: `${prefix}-resource.json`, uri, protocolVersion }) + '\n');
