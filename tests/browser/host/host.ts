// A minimal MCP Apps host for the browser tests, built on the official host-side
// bridge (`AppBridge` from @modelcontextprotocol/ext-apps) and the TypeScript SDK v2
// client over streamable HTTP. Bundled by esbuild at test time (tests/browser/run.mjs).
//
// Query parameters:
//   mcp         MCP endpoint URL (absolute, or relative to this page: the test server
//               proxies /mcp to the real endpoint so the browser needs no CORS)
//   tool        tool to call; its _meta.ui.resourceUri names the View
//   args        tool arguments, JSON (default {})
//   argsUrl     instead of args: a URL to fetch them from (arguments of any size)
//   html        instead of reading the tool's ui:// resource, mount the HTML at this URL
//   toolResult  with html: the CallToolResult (JSON) to send to the View
//   toolResultUrl  with html: a URL to fetch that JSON from
//   sandbox     URL of the sandbox proxy page (default ./sandbox.html); the test
//               server serves it on a second origin
//   theme       light (default) | dark
//   frameHeight the View's frame height (px) until it reports its own (default 120)
//   toolCallId  hostContext.toolInfo.id: the same id on a reload is a remount of the
//               same call's View
//
// Mounting follows the MCP Apps web-host architecture: an outer iframe on another
// origin (the sandbox proxy, `allow-scripts allow-same-origin allow-forms`, CSP sent
// as an HTTP header built from _meta.ui.csp) receives the HTML in
// ui/notifications/sandbox-resource-ready and writes it into an inner iframe; it
// relays every other message. AppBridge talks to the outer iframe through
// PostMessageTransport.
//
// Progress for the test driver: window.__host (see HostState below).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  buildAllowAttribute,
} from "@modelcontextprotocol/ext-apps/app-bridge";

type Json = unknown;

interface LogEntry {
  t: number; // ms since page start
  level: "info" | "error";
  msg: string;
  data?: Json;
}

interface ViewCall {
  name: string;
  arguments: Json;
  result?: Json;
  error?: string;
}

interface HostState {
  phase: string;
  done: boolean; // the View is initialized and has received tool input and result
  error: string | null;
  log: LogEntry[];
  /** Every JSON-RPC message across the bridge, in order: dir, method or response id. */
  bridge: Array<{ dir: "host->view" | "view->host"; method?: string; id?: Json; kind: string }>;
  server: { name?: string; version?: string; protocolVersion?: string } | null;
  tool: Json;
  resource: { uri: string; mimeType?: string; meta?: Json; listMeta?: Json; htmlLength: number } | null;
  csp: Json;
  appInfo: Json;
  appCapabilities: Json;
  initialized: boolean;
  toolInputSent: boolean;
  toolResultSent: boolean;
  dataTool: Json; // with dataTool: that tool's tools/list entry
  dataResult: Json; // with dataTool: its result, whose structuredContent became the args
  toolResult: Json; // the result sent with ui/notifications/tool-result
  lastToolResult: Json; // the latest tools/call result, initial or from the View
  viewCalls: ViewCall[];
  sizes: Array<{ width?: number; height?: number }>;
  messages: Json[]; // ui/message requests from the View
  links: string[]; // ui/open-link requests from the View
  teardown: string | null;
  setTheme: (theme: "light" | "dark") => Promise<void>;
  teardownView: () => Promise<string>;
}

const started = performance.now();
const params = new URLSearchParams(location.search);
const logEl = document.getElementById("log")!;
const phaseEl = document.getElementById("phase")!;
const container = document.getElementById("view-container")!;

const state: HostState = {
  phase: "starting",
  done: false,
  error: null,
  log: [],
  bridge: [],
  server: null,
  tool: null,
  resource: null,
  csp: null,
  appInfo: null,
  appCapabilities: null,
  initialized: false,
  toolInputSent: false,
  toolResultSent: false,
  dataTool: null,
  dataResult: null,
  toolResult: null,
  lastToolResult: null,
  viewCalls: [],
  sizes: [],
  messages: [],
  links: [],
  teardown: null,
  setTheme: async () => {},
  teardownView: async () => "not mounted",
};
(window as any).__host = state;

function log(msg: string, data?: Json, level: "info" | "error" = "info"): void {
  const entry: LogEntry = { t: Math.round(performance.now() - started), level, msg };
  if (data !== undefined) entry.data = data;
  state.log.push(entry);
  const line = document.createElement("div");
  if (level === "error") line.className = "error";
  let text = `${String(entry.t).padStart(5)} ms  ${msg}`;
  if (data !== undefined) {
    let json = JSON.stringify(data);
    if (json && json.length > 300) json = json.slice(0, 300) + "…";
    text += `  ${json}`;
  }
  line.textContent = text;
  logEl.appendChild(line);
}

function setPhase(phase: string): void {
  state.phase = phase;
  phaseEl.textContent = phase;
  phaseEl.dataset.phase = phase;
  log(`phase: ${phase}`);
}

function fail(message: string): never {
  throw new Error(message);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => { clearTimeout(timer); resolve(v); },
      (e) => { clearTimeout(timer); reject(e); },
    );
  });
}

function parseJsonParam(name: string, fallback: Json): Json {
  const raw = params.get(name);
  if (raw === null || raw === "") return fallback;
  try {
    return JSON.parse(raw);
  } catch (e) {
    fail(`query parameter ${name} is not JSON: ${(e as Error).message}`);
  }
}

function decodeBase64Utf8(b64: string): string {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** Spec rule: `visibility` without "app" means the View may not call the tool. */
function appMayCall(tool: any): boolean {
  const visibility = tool?._meta?.ui?.visibility;
  return !Array.isArray(visibility) || visibility.includes("app");
}

async function main(): Promise<void> {
  const mcpParam = params.get("mcp");
  const toolName = params.get("tool");
  let args = parseJsonParam("args", {}) as Record<string, unknown>;
  const argsUrl = params.get("argsUrl");
  if (argsUrl) args = (await (await fetch(argsUrl)).json()) as Record<string, unknown>;
  // The decoupled pattern: call this data tool first and pass its
  // structuredContent to the (render) tool as its arguments.
  const dataToolName = params.get("dataTool");
  const htmlUrl = params.get("html");
  const theme = params.get("theme") === "dark" ? "dark" : "light";
  const sandboxUrl = new URL(params.get("sandbox") ?? "sandbox.html", location.href);
  if (!htmlUrl && (!mcpParam || !toolName)) fail("need ?mcp=URL&tool=NAME, or ?html=URL");
  document.getElementById("target")!.textContent =
    `${toolName ?? "(no tool)"} @ ${mcpParam ?? "(no server)"}${htmlUrl ? ` · html ${htmlUrl}` : ""}`;

  // --- MCP client -----------------------------------------------------------
  let client: Client | null = null;
  let tools: any[] = [];
  if (mcpParam) {
    setPhase("connecting");
    client = new Client(
      { name: "mcp-ui-gateway-test-host", version: "0.1.0" },
      {
        capabilities: {
          // MCP Apps: the host renders text/html;profile=mcp-app resources.
          extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } },
        } as any,
      },
    );
    client.onerror = (e) => log(`mcp client error: ${e.message}`, undefined, "error");
    const transport = new StreamableHTTPClientTransport(new URL(mcpParam, location.href));
    await withTimeout(client.connect(transport), 20000, "MCP connect");
    const info = client.getServerVersion();
    state.server = {
      name: info?.name,
      version: info?.version,
      protocolVersion: client.getNegotiatedProtocolVersion(),
    };
    log("connected", state.server);
    setPhase("listing tools");
    tools = (await withTimeout(client.listTools(), 20000, "tools/list")).tools as any[];
    log(`tools/list: ${tools.length} tools`, tools.map((t) => t.name));
  }

  let tool: any = null;
  if (toolName && client) {
    tool = tools.find((t) => t.name === toolName) ?? fail(`tool ${toolName} is not in tools/list`);
    state.tool = tool;
  }
  if (dataToolName && client) {
    state.dataTool = tools.find((t) => t.name === dataToolName) ?? fail(`tool ${dataToolName} is not in tools/list`);
    setPhase("calling the data tool");
    log(`tools/call ${dataToolName} (data)`, args);
    const data: any = await withTimeout(client.callTool({ name: dataToolName, arguments: args }), 20000, "data tools/call");
    state.dataResult = data;
    if (data.isError || !data.structuredContent) fail(`data tool ${dataToolName} returned no structuredContent`);
    args = data.structuredContent;
  }

  // --- The View's HTML ------------------------------------------------------
  let html: string;
  let uiMeta: any = {};
  if (htmlUrl) {
    setPhase("fetching html");
    const response = await withTimeout(fetch(htmlUrl), 10000, `GET ${htmlUrl}`);
    if (!response.ok) fail(`GET ${htmlUrl}: HTTP ${response.status}`);
    html = await response.text();
    state.resource = { uri: htmlUrl, htmlLength: html.length };
    log(`html fixture: ${html.length} chars`);
  } else {
    const uri = getToolUiResourceUri(tool) ?? fail(`tool ${toolName} has no _meta.ui.resourceUri`);
    if (!uri.startsWith("ui://")) fail(`resourceUri ${uri} does not use the ui:// scheme`);
    log(`tool ${toolName} -> ${uri}`);
    setPhase("reading resource");
    const read = await withTimeout(client!.readResource({ uri }), 20000, "resources/read");
    const content: any =
      read.contents.find((c: any) => c.uri === uri) ?? read.contents[0] ?? fail(`resources/read ${uri}: no contents`);
    if (content.mimeType !== RESOURCE_MIME_TYPE) {
      fail(`resources/read ${uri}: mimeType ${JSON.stringify(content.mimeType)}, want ${RESOURCE_MIME_TYPE}`);
    }
    if (typeof content.text === "string") html = content.text;
    else if (typeof content.blob === "string") html = decodeBase64Utf8(content.blob);
    else fail(`resources/read ${uri}: neither text nor blob`);
    // _meta.ui may sit on the resources/list entry (static) and on the content item
    // (dynamic); the content item wins.
    let listMeta: any;
    if (client!.getServerCapabilities()?.resources) {
      try {
        const listed = await withTimeout(client!.listResources(), 20000, "resources/list");
        listMeta = (listed.resources as any[]).find((r) => r.uri === uri)?._meta?.ui;
      } catch (e) {
        log(`resources/list failed: ${(e as Error).message}`, undefined, "error");
      }
    }
    uiMeta = { ...(listMeta ?? {}), ...(content._meta?.ui ?? {}) };
    state.resource = { uri, mimeType: content.mimeType, meta: content._meta ?? null, listMeta: listMeta ?? null, htmlLength: html.length };
    log(`resource ${uri}: ${html.length} chars, ${content.mimeType}`, content._meta ?? null);
  }
  state.csp = uiMeta.csp ?? null;

  // --- The tool call runs while the View mounts -------------------------------
  let resultPromise: Promise<Json>;
  if (htmlUrl) {
    const inline = params.get("toolResult");
    const url = params.get("toolResultUrl");
    if (inline) resultPromise = Promise.resolve(parseJsonParam("toolResult", null));
    else if (url) resultPromise = fetch(url).then((r) => (r.ok ? r.json() : fail(`GET ${url}: HTTP ${r.status}`)));
    else if (client && toolName) resultPromise = client.callTool({ name: toolName, arguments: args });
    else fail("html mode needs toolResult, toolResultUrl, or mcp and tool");
  } else {
    log(`tools/call ${toolName}`, args);
    resultPromise = client!.callTool({ name: toolName!, arguments: args });
  }
  resultPromise.catch(() => {}); // reported below, once awaited

  // --- Mount ----------------------------------------------------------------
  setPhase("mounting");
  container.dataset.prefersBorder = String(uiMeta.prefersBorder === true);
  const iframe = document.createElement("iframe");
  iframe.id = "view-sandbox";
  iframe.title = "MCP App";
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  const frameHeight = Number(params.get("frameHeight"));
  if (frameHeight > 0) iframe.style.height = `${frameHeight}px`;
  const allow = buildAllowAttribute(uiMeta.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  container.appendChild(iframe);

  const hostContext: any = {
    theme,
    platform: "web",
    displayMode: "inline",
    availableDisplayModes: ["inline"],
    containerDimensions: { maxHeight: 2000, width: container.clientWidth },
    locale: navigator.language || "en-US",
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: "mcp-ui-gateway-test-host/0.1.0",
    deviceCapabilities: { touch: false, hover: true },
  };
  if (tool) hostContext.toolInfo = { id: params.get("toolCallId") ?? undefined, tool };

  const bridge = new AppBridge(
    null, // no automatic forwarding: the hooks below forward to `client` themselves, and log
    { name: "mcp-ui-gateway-test-host", version: "0.1.0" },
    {
      openLinks: {},
      logging: {},
      message: { text: {} },
      updateModelContext: { text: {}, structuredContent: {} },
      ...(client ? { serverTools: {}, serverResources: {} } : {}),
      sandbox: { csp: uiMeta.csp ?? {}, ...(uiMeta.permissions ? { permissions: uiMeta.permissions } : {}) },
    },
    { hostContext },
  );

  let initializedResolve!: () => void;
  const initialized = new Promise<void>((resolve) => (initializedResolve = resolve));
  bridge.oninitialized = () => {
    state.initialized = true;
    state.appInfo = bridge.getAppVersion() ?? null;
    state.appCapabilities = bridge.getAppCapabilities() ?? null;
    log("view initialized", { appInfo: state.appInfo, appCapabilities: state.appCapabilities });
    initializedResolve();
  };
  bridge.onsandboxready = () => {
    log("sandbox proxy ready; sending the HTML");
    void bridge.sendSandboxResourceReady({
      html,
      sandbox: "allow-scripts allow-same-origin allow-forms",
      ...(uiMeta.csp ? { csp: uiMeta.csp } : {}),
      ...(uiMeta.permissions ? { permissions: uiMeta.permissions } : {}),
    });
  };
  bridge.onsizechange = (size) => {
    state.sizes.push(size);
    if (typeof size.height === "number" && size.height > 0) {
      iframe.style.height = `${Math.min(Math.ceil(size.height), 2000)}px`;
    }
  };
  bridge.oncalltool = async (callParams, extra) => {
    const call: ViewCall = { name: callParams.name, arguments: callParams.arguments ?? {} };
    state.viewCalls.push(call);
    log(`view -> tools/call ${call.name}`, call.arguments);
    try {
      if (!client) fail("this host has no MCP server to call");
      const target = tools.find((t) => t.name === callParams.name);
      if (target && !appMayCall(target)) fail(`tool ${callParams.name} is not visible to apps (_meta.ui.visibility)`);
      const result = await client.callTool(callParams, { signal: extra?.mcpReq?.signal } as any);
      call.result = result;
      state.lastToolResult = result;
      log(`view <- tools/call ${call.name} result`, result);
      return result;
    } catch (e) {
      call.error = (e as Error).message;
      log(`view <- tools/call ${call.name} failed: ${call.error}`, undefined, "error");
      throw e;
    }
  };
  if (client) {
    bridge.onreadresource = async (p, extra) => {
      log("view -> resources/read", p);
      return client!.readResource(p, { signal: extra?.mcpReq?.signal } as any);
    };
    bridge.onlistresources = async (p, extra) => {
      log("view -> resources/list");
      return client!.listResources(p, { signal: extra?.mcpReq?.signal } as any);
    };
  }
  bridge.onopenlink = async ({ url }) => {
    state.links.push(url);
    log(`view -> ui/open-link ${url} (not opened)`);
    return {};
  };
  bridge.onmessage = async (p) => {
    state.messages.push(p);
    log("view -> ui/message", p);
    return {};
  };
  bridge.onupdatemodelcontext = async (p) => {
    log("view -> ui/update-model-context", p);
    return {};
  };
  bridge.onloggingmessage = (p) => log(`view log [${p.level}]`, p.data);
  bridge.onrequestteardown = () => log("view -> ui/notifications/request-teardown");

  const transport = new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!);
  // Trace the bridge traffic in both directions for the test.
  const trace = (dir: "host->view" | "view->host", m: any) => {
    const kind = m?.method !== undefined ? (m?.id !== undefined ? "request" : "notification") : m?.error ? "error" : "response";
    state.bridge.push({ dir, kind, ...(m?.method !== undefined ? { method: m.method } : {}), ...(m?.id !== undefined ? { id: m.id } : {}) });
  };
  const send = transport.send.bind(transport);
  transport.send = (m: any, o?: any) => {
    trace("host->view", m);
    return send(m, o);
  };
  window.addEventListener("message", (event) => {
    if (event.source === iframe.contentWindow && event.data?.jsonrpc === "2.0") trace("view->host", event.data);
  });
  await bridge.connect(transport);

  // Only now load the sandbox page: its proxy-ready must find the bridge listening.
  const src = new URL(sandboxUrl);
  src.searchParams.set("csp", JSON.stringify(uiMeta.csp ?? {}));
  iframe.src = src.href;

  setPhase("waiting for ui/initialize");
  await withTimeout(initialized, 20000, "ui/notifications/initialized from the view");

  state.setTheme = async (next) => {
    log(`host context: theme ${next}`);
    await bridge.sendHostContextChange({ theme: next });
  };
  state.teardownView = async () => {
    try {
      await withTimeout(bridge.teardownResource({}), 5000, "ui/resource-teardown");
      state.teardown = "answered";
    } catch (e) {
      state.teardown = `failed: ${(e as Error).message}`;
    }
    log(`teardown: ${state.teardown}`);
    return state.teardown;
  };

  await bridge.sendToolInput({ arguments: args });
  state.toolInputSent = true;
  log("sent tool-input", args);

  setPhase("waiting for the tool result");
  let result: any;
  try {
    result = await withTimeout(resultPromise, 30000, `tools/call ${toolName ?? ""}`);
  } catch (e) {
    await bridge.sendToolCancelled({ reason: (e as Error).message });
    throw e;
  }
  state.toolResult = result;
  state.lastToolResult = result;
  await bridge.sendToolResult(result);
  state.toolResultSent = true;
  log("sent tool-result", result);
  state.done = true;
  setPhase("ready");
}

main().catch((e: Error) => {
  state.error = e?.message ?? String(e);
  log(`FAILED: ${state.error}`, undefined, "error");
  setPhase("error");
});
