#!/usr/bin/env node
// Drive an MCP server with the TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2).
//
//   node tests/peers/ts_client.mjs URL [--transport streamable|sse]
//        [--dump-tools FILE] [--dump-resources FILE]
//        [--timeout S] [--request-timeout S] [--long-duration S] [--long-steps N] [--skip-elicitation]
//        [--call TOOL [--args JSON]] [--stdio-args JSON]
//
// streamable: StreamableHTTPClientTransport on URL (e.g. http://127.0.0.1:PORT/mcp)
// sse:        SSEClientTransport on URL (e.g. http://127.0.0.1:PORT/sse)
// stdio:      StdioClientTransport: URL is the program to run, --stdio-args its arguments
//             (a JSON array of strings); messages are captured at the transport instead of
//             the HTTP body, for a direct baseline of a stdio server
//
// Generic mode, for any server: --call TOOL [--args JSON] initializes, lists tools (and
// honours --dump-tools), calls TOOL with the JSON object ARGS and prints the result in the
// summary's `call` (`is_error`, `text`, `structured_content`) instead of the steps below.
//
// Against @modelcontextprotocol/server-everything (or a gateway in front of it) it:
// initializes (the SDK offers 2025-11-25); lists tools; calls `echo`; calls
// `trigger-sampling-request` (answers the server's sampling/createMessage with a fixed
// message) and `trigger-elicitation-request` (accepts elicitation/create with fixed
// content); calls `trigger-long-running-operation` with a progress token and counts the
// notifications/progress; lists resources. Prints one JSON summary object on stdout and
// exits 0, or prints `ts_client: FAILED ...` on stderr and exits 1. The whole run is
// bounded by --timeout and each request by --request-timeout.
//
// --dump-tools / --dump-resources write the `result` of the tools/list / resources/list
// response exactly as it came off the wire (captured from the HTTP body by a fetch
// wrapper, before the SDK's schemas see it), as pretty-printed JSON, so a test can compare
// a direct run with a run through the gateway value for value.
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const SAMPLING_REPLY = 'ts-client fixed sampling reply';
const SAMPLING_MODEL = 'ts-client-fixed-model';
const ELICITATION_CONTENT = { name: 'Gateway Tester', check: true, email: 'tester@example.invalid' };

function usage(msg) {
  if (msg) process.stderr.write(`ts_client: ${msg}\n`);
  process.stderr.write('usage: ts_client.mjs URL [--transport streamable|sse|stdio] [--dump-tools FILE] ' +
    '[--dump-resources FILE] [--timeout S] [--request-timeout S] [--long-duration S] [--long-steps N] ' +
    '[--skip-elicitation] [--call TOOL [--args JSON]] [--stdio-args JSON]\n');
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      transport: { type: 'string', default: 'streamable' },
      'dump-tools': { type: 'string' },
      'dump-resources': { type: 'string' },
      timeout: { type: 'string', default: '60' },
      'request-timeout': { type: 'string', default: '20' },
      'long-duration': { type: 'string', default: '2' },
      'long-steps': { type: 'string', default: '4' },
      'skip-elicitation': { type: 'boolean', default: false },
      call: { type: 'string' },
      args: { type: 'string', default: '{}' },
      'stdio-args': { type: 'string', default: '[]' },
      cafile: { type: 'string' },
      http2: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
} catch (e) {
  usage(e.message);
}
const opts = parsed.values;
if (opts.help) usage();
if (parsed.positionals.length !== 1) usage('exactly one URL expected');
if (!['streamable', 'sse', 'stdio'].includes(opts.transport)) usage(`bad --transport ${opts.transport}`);
const stdioMode = opts.transport === 'stdio';
const url = stdioMode ? null : new URL(parsed.positionals[0]);
let callArgs;
let stdioArgs;
try {
  callArgs = JSON.parse(opts.args);
  stdioArgs = JSON.parse(opts['stdio-args']);
} catch (e) {
  usage(`--args / --stdio-args: bad JSON: ${e.message}`);
}
if (!callArgs || typeof callArgs !== 'object' || Array.isArray(callArgs)) usage('--args must be a JSON object');
if (!Array.isArray(stdioArgs) || !stdioArgs.every((a) => typeof a === 'string')) {
  usage('--stdio-args must be a JSON array of strings');
}
const totalTimeoutS = Number(opts.timeout);
const requestTimeoutMs = Number(opts['request-timeout']) * 1000;
const longDuration = Number(opts['long-duration']);
const longSteps = Number(opts['long-steps']);

let step = 'start';
function fail(message) {
  process.stderr.write(`ts_client: FAILED at ${step}: ${message}\n`);
  if (process.env.TS_CLIENT_DEBUG) {
    process.stderr.write(`ts_client: http log: ${JSON.stringify(httpLog)}\n`);
    process.stderr.write(`ts_client: transport errors: ${JSON.stringify(transportErrors)}\n`);
    for (const m of wireMessages) process.stderr.write(`ts_client: wire <- ${JSON.stringify(m).slice(0, 200)}\n`);
  }
  process.exit(1);
}
const deadline = setTimeout(() => fail(`timed out after ${totalTimeoutS} s (--timeout)`), totalTimeoutS * 1000);

// ---------------------------------------------------------------------------------------
// Wire capture: a fetch wrapper logs every HTTP exchange and tees each response body to a
// small JSON / SSE parser, so the messages are seen exactly as the server (or gateway) sent
// them, independent of the SDK's zod schemas.
const httpLog = [];
const wireMessages = []; // every JSON-RPC message received, in arrival order
const responsesById = new Map(); // id -> raw response message
const requestMethodById = new Map(); // id -> method, for requests this client sent
const readers = new Set();

function recordIncoming(msg) {
  if (Array.isArray(msg)) {
    for (const m of msg) recordIncoming(m);
    return;
  }
  if (!msg || typeof msg !== 'object') return;
  wireMessages.push(msg);
  if ('id' in msg && ('result' in msg || 'error' in msg) && !('method' in msg)) {
    responsesById.set(JSON.stringify(msg.id), msg);
  }
}

async function consumeBody(response, contentType) {
  const reader = response.body.getReader();
  readers.add(reader);
  const decoder = new TextDecoder();
  let buffer = '';
  const handleEvent = (block) => {
    let event = 'message';
    const data = [];
    for (const line of block.split(/\r\n|\r|\n/)) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (event !== 'message' || data.length === 0) return;
    const text = data.join('\n');
    if (text === '') return; // priming event
    try {
      recordIncoming(JSON.parse(text));
    } catch {
      /* not JSON: the SDK will report it */
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      if (contentType.includes('text/event-stream')) {
        let m;
        while ((m = /\r\n\r\n|\n\n|\r\r/.exec(buffer)) !== null) {
          handleEvent(buffer.slice(0, m.index));
          buffer = buffer.slice(m.index + m[0].length);
        }
      }
    }
    buffer += decoder.decode();
    if (contentType.includes('application/json') && buffer.trim() !== '') {
      try {
        recordIncoming(JSON.parse(buffer));
      } catch {
        /* the SDK reports bad JSON */
      }
    }
  } catch {
    /* stream aborted (client closed it): fine */
  } finally {
    readers.delete(reader);
  }
}

function recordOutgoing(body) {
  const msgs = Array.isArray(body) ? body : [body];
  for (const m of msgs) {
    if (m && m.method && 'id' in m) requestMethodById.set(JSON.stringify(m.id), m.method);
  }
  return msgs;
}

// stdio: the same capture, at the transport (each message as parsed from its line; JSON.parse
// keeps key order, so a dump still shows the server's order).
function tapTransport(t) {
  const send = t.send.bind(t);
  t.send = (message, options) => {
    recordOutgoing(message);
    return send(message, options);
  };
  let handler;
  const tapped = (message, extra) => {
    recordIncoming(message);
    handler?.(message, extra);
  };
  Object.defineProperty(t, 'onmessage', {
    configurable: true,
    get: () => (handler ? tapped : undefined),
    set: (fn) => {
      handler = fn;
    },
  });
  return t;
}

async function capturingFetch(input, init = {}) {
  const target = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  const method = (init.method ?? 'GET').toUpperCase();
  const entry = { http: method, path: target.pathname + target.search };
  if (typeof init.body === 'string') {
    try {
      const msgs = recordOutgoing(JSON.parse(init.body));
      const first = msgs[0] ?? {};
      entry.rpc = first.method ?? ('id' in first ? 'response' : undefined);
      if (first.method === 'initialize') entry.requested_version = first.params?.protocolVersion;
    } catch {
      /* not JSON */
    }
  }
  const headers = new Headers(init.headers ?? {});
  if (headers.get('mcp-protocol-version')) entry['mcp-protocol-version'] = headers.get('mcp-protocol-version');
  httpLog.push(entry);
  const response = await httpsFetch(input, init);
  entry.status = response.status;
  const contentType = response.headers.get('content-type') ?? '';
  if (response.body && (contentType.includes('text/event-stream') || contentType.includes('application/json'))) {
    const copy = response.clone();
    consumeBody(copy, contentType);
  }
  return response;
}

async function rawResponseFor(method, resultPredicate = () => true) {
  // The tee'd copy may be parsed a moment after the SDK resolved: wait, bounded.
  for (let i = 0; i < 100; i++) {
    const ids = [...requestMethodById.entries()].filter(([, m]) => m === method).map(([id]) => id);
    const found = ids.map((id) => responsesById.get(id)).filter((r) => r && resultPredicate(r));
    if (found.length > 0) return found[found.length - 1];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no raw ${method} response captured on the wire`);
}

// ---------------------------------------------------------------------------------------
const counters = { sampling: 0, elicitation: 0, progressCallback: 0 };
const progressValues = [];

const client = new Client(
  { name: 'mcp-ui-gateway-ts-client', version: '0.1.0' },
  {
    capabilities: {
      sampling: {},
      ...(opts['skip-elicitation'] ? {} : { elicitation: { form: {} } }),
    },
  },
);
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  counters.sampling += 1;
  return {
    model: SAMPLING_MODEL,
    stopReason: 'endTurn',
    role: 'assistant',
    content: { type: 'text', text: SAMPLING_REPLY },
  };
});
if (!opts['skip-elicitation']) {
  client.setRequestHandler(ElicitRequestSchema, async () => {
    counters.elicitation += 1;
    return { action: 'accept', content: { ...ELICITATION_CONTENT } };
  });
}
// --cafile / --http2 (https:// URLs): fetch through undici with a TLS connector that
// trusts only the given authorities and offers h2 by ALPN; the protocol each new
// connection agreed on is recorded in the summary's `alpn`.
const alpnSeen = [];
let httpsFetch = fetch;
if (opts.cafile || opts.http2) {
  const { Agent, fetch: undiciFetch } = await import('undici');
  const ca = opts.cafile ? readFileSync(opts.cafile) : undefined;
  const dispatcher = new Agent({
    allowH2: opts.http2,
    connect: (o, cb) => {
      let done = false;
      const once = (err, socket) => {
        if (!done) {
          done = true;
          cb(err, socket);
        }
      };
      const socket = tls.connect({
        host: o.hostname,
        port: Number(o.port) || 443,
        servername: net.isIP(o.hostname) ? undefined : o.hostname,
        ca,
        ALPNProtocols: opts.http2 ? ['h2', 'http/1.1'] : ['http/1.1'],
      });
      socket.once('secureConnect', () => {
        alpnSeen.push(socket.alpnProtocol || 'none');
        once(null, socket);
      });
      socket.once('error', (e) => once(e, null));
    },
  });
  httpsFetch = (input, init) => undiciFetch(input, { ...init, dispatcher });
}
const transportErrors = [];
client.onerror = (e) => transportErrors.push(String(e?.message ?? e));

const transport = opts.transport === 'streamable'
  ? new StreamableHTTPClientTransport(url, { fetch: capturingFetch })
  : opts.transport === 'sse'
    ? new SSEClientTransport(url, { fetch: capturingFetch })
    : tapTransport(new StdioClientTransport({ command: parsed.positionals[0], args: stdioArgs, stderr: 'inherit' }));

const textOf = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const reqOpts = { timeout: requestTimeoutMs };

async function main() {
  const t0 = performance.now();
  const summary = { client: 'typescript-sdk-v1', transport: opts.transport, url: url ? url.href : parsed.positionals[0] };

  step = 'connect (initialize)';
  await client.connect(transport, reqOpts);
  const init = await rawResponseFor('initialize');
  if (init.error) throw new Error(`initialize failed: ${JSON.stringify(init.error)}`);
  summary.protocol_version = init.result.protocolVersion;
  summary.negotiation = 'initialize';
  const sv = client.getServerVersion();
  summary.server_info = sv ? { name: sv.name, version: sv.version } : null;

  step = 'tools/list';
  const tools = await client.listTools(undefined, reqOpts);
  const rawTools = await rawResponseFor('tools/list');
  summary.tools = tools.tools.map((t) => t.name);
  summary.tool_count = summary.tools.length;
  if (opts['dump-tools']) writeFileSync(opts['dump-tools'], JSON.stringify(rawTools.result, null, 2) + '\n');

  if (opts.call !== undefined) {
    step = `tools/call ${opts.call}`;
    const called = await client.callTool({ name: opts.call, arguments: callArgs }, undefined, reqOpts);
    summary.call = {
      tool: opts.call,
      is_error: Boolean(called.isError),
      text: textOf(called),
      structured_content: called.structuredContent ?? null,
    };
    return finish(summary, t0);
  }

  step = 'tools/call echo';
  const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello from ts_client' } }, undefined, reqOpts);
  if (echo.isError || textOf(echo) !== 'Echo: hello from ts_client') {
    throw new Error(`unexpected echo result: ${JSON.stringify(echo)}`);
  }
  summary.echo = textOf(echo);

  step = 'tools/call trigger-sampling-request (sampling/createMessage round trip)';
  const sampled = await client.callTool(
    { name: 'trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 16 } }, undefined, reqOpts);
  if (sampled.isError || !textOf(sampled).includes(SAMPLING_REPLY) || counters.sampling !== 1) {
    throw new Error(`sampling round trip failed (requests=${counters.sampling}): ${JSON.stringify(textOf(sampled))}`);
  }
  summary.sampling_result_text = textOf(sampled);

  if (!opts['skip-elicitation']) {
    step = 'tools/call trigger-elicitation-request (elicitation/create round trip)';
    const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, reqOpts);
    if (elicited.isError || !textOf(elicited).includes('Gateway Tester') || counters.elicitation !== 1) {
      throw new Error(`elicitation round trip failed (requests=${counters.elicitation}): ` +
        JSON.stringify(textOf(elicited)));
    }
    summary.elicitation_result_text = textOf(elicited);
  }

  step = 'tools/call trigger-long-running-operation with progress token';
  const long = await client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: longDuration, steps: longSteps } },
    undefined,
    {
      timeout: requestTimeoutMs + longDuration * 1000,
      onprogress: (p) => {
        counters.progressCallback += 1;
        progressValues.push(p.progress);
      },
    },
  );
  if (long.isError) throw new Error(`long-running operation returned an error: ${textOf(long)}`);
  summary.long_running_result_text = textOf(long);
  // Counted on the wire: SDK v1 runs notification handlers a microtask later than response
  // handlers, so when the last notifications/progress and the response arrive in one chunk
  // (legacy SSE does this) the SDK drops that progress ("unknown token") and onprogress
  // fires steps-1 times. progress_callbacks reports what onprogress saw.
  const wireProgress = () => wireMessages.filter(
    (m) => m.method === 'notifications/progress' && !('id' in m)).length;
  for (let i = 0; i < 100 && wireProgress() < longSteps; i++) await new Promise((r) => setTimeout(r, 20));
  summary.progress_expected = longSteps;
  summary.progress_received = wireProgress();
  summary.progress_callbacks = counters.progressCallback;
  summary.progress_values = progressValues;
  if (summary.progress_received !== longSteps) {
    throw new Error(`received ${summary.progress_received} notifications/progress on the wire, expected ${longSteps} ` +
      `(onprogress called ${counters.progressCallback} times)`);
  }

  step = 'resources/list';
  const resources = await client.listResources(undefined, reqOpts);
  const rawResources = await rawResponseFor('resources/list');
  summary.resource_count = resources.resources.length;
  summary.resources_next_cursor = resources.nextCursor ?? null;
  summary.resource_uris_first = resources.resources.slice(0, 3).map((r) => r.uri);
  if (opts['dump-resources']) {
    writeFileSync(opts['dump-resources'], JSON.stringify(rawResources.result, null, 2) + '\n');
  }

  return finish(summary, t0);
}

async function finish(summary, t0) {
  step = 'close';
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
  await client.close();
  for (const r of readers) r.cancel().catch(() => {});

  const byMethod = {};
  for (const m of wireMessages) {
    if (m.method && !('id' in m)) byMethod[m.method] = (byMethod[m.method] ?? 0) + 1;
  }
  summary.sampling_requests = counters.sampling;
  summary.elicitation_requests = counters.elicitation;
  summary.notifications_on_wire = byMethod;
  if (transportErrors.length) summary.transport_errors = transportErrors;
  summary.http_log = httpLog;
  if (alpnSeen.length) summary.alpn = alpnSeen;
  summary.elapsed_s = Math.round(performance.now() - t0) / 1000;
  return summary;
}

main().then(
  (summary) => {
    clearTimeout(deadline);
    process.stdout.write(JSON.stringify(summary) + '\n', () => process.exit(0));
  },
  (e) => fail(`${e?.name ?? 'Error'}: ${e?.message ?? e}`),
);
