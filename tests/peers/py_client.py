#!/usr/bin/env python3
"""Drive an MCP server with the Python `mcp` 2.3 client library (`mcp.Client`).

    tests/peers/.venv/bin/python tests/peers/py_client.py URL [--transport streamable|sse]

Against @modelcontextprotocol/server-everything (or a gateway in front of it) it:
  1. connects with `mcp.Client` in mode "auto" (the default): the client first probes
     `server/discover` at 2026-07-28 and falls back to the `initialize` handshake when the
     server rejects the probe (server-everything only knows up to 2025-11-25);
  2. lists tools;
  3. calls `echo`;
  4. calls `trigger-sampling-request` (the server sends `sampling/createMessage`; this client
     answers with a fixed message) and `trigger-elicitation-request` (the server sends
     `elicitation/create`; this client accepts with fixed content);
  5. calls `trigger-long-running-operation` with a progress token and counts the
     `notifications/progress` received;
  6. lists resources.

Generic mode, for any server: `--call TOOL [--args JSON]` connects, lists tools, calls TOOL with
the JSON object ARGS and prints the result (`call`: `is_error`, `text`, `structured_content`,
`meta`) and every listed tool's `_meta` (`tool_meta`) instead of steps 3-6. With
`--data-tool DATA`, DATA is called first with ARGS (`data_call`) and TOOL gets its structured
content: the decoupled data/render pattern. `--transport stdio` runs URL as a program (arguments in `--stdio-args`, a
JSON array) and talks MCP over its stdin/stdout, e.g. a direct baseline for a stdio server:

    py_client.py tests/peers/.venv/bin/python --transport stdio \
        --stdio-args '["-m","mcp_server_time"]' --call get_current_time --args '{"timezone":"UTC"}'

`--then TOOL` (repeatable) calls each TOOL with `{}` after `--call`, in order (`then`: one
result each, as `call`). `--roots` gives the client a roots callback listing `ROOT_URI` (the
`roots` capability; without it the client declares none, as before).

`--mode 2026-07-28` pins the client to that revision (`mcp.Client(..., mode="2026-07-28")`): no
`server/discover` probe and no fallback to `initialize` (`"negotiation": "pinned"`).

It prints one JSON object on stdout and exits 0, or prints `py_client: FAILED ...` on stderr
and exits 1. Every step is bounded by --timeout (whole run) and --request-timeout (each
request). The HTTP exchanges (method, JSON-RPC method, status) are recorded in "http_log", so
the version-negotiation path is visible.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import time
from typing import Any

import anyio
import httpx2
from mcp import Client, types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SAMPLING_REPLY = "py-client fixed sampling reply"
SAMPLING_MODEL = "py-client-fixed-model"
ELICITATION_CONTENT = {"name": "Gateway Tester", "check": True, "email": "tester@example.invalid"}
ROOT_URI = "file:///tmp/py-client-root"


class StepFailed(Exception):
    pass


# The step in progress, so a timeout can say where it struck.
CURRENT = {"step": "start"}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="MCP endpoint: .../mcp for streamable HTTP, .../sse for legacy SSE; "
                                "the program to run for --transport stdio")
    p.add_argument("--transport", choices=["streamable", "sse", "stdio"], default="streamable")
    p.add_argument("--stdio-args", default="[]", help="--transport stdio: the program's arguments, a JSON array")
    p.add_argument("--call", metavar="TOOL",
                   help="generic mode: list tools, call TOOL with --args, print the result (no other steps)")
    p.add_argument("--args", default="{}", help="--call: the tool's arguments, a JSON object")
    p.add_argument("--then", metavar="TOOL", action="append", default=[],
                   help="--call: then call TOOL with {} (repeatable, in order); results in `then`")
    p.add_argument("--roots", action="store_true",
                   help=f"answer roots/list with the one root {ROOT_URI} (declares the roots capability)")
    p.add_argument("--data-tool", metavar="TOOL",
                   help="--call: first call TOOL with --args, then call --call with its structured content "
                        "(the decoupled data/render pattern); both results are printed, with their _meta")
    p.add_argument("--mode", choices=["auto", "legacy", "2026-07-28"], default="auto",
                   help="mcp.Client negotiation mode (auto: probe server/discover, fall back to initialize; "
                        "legacy: initialize only; 2026-07-28: adopt that revision directly, no probe and "
                        "no fallback)")
    p.add_argument("--timeout", type=float, default=60.0, help="bound on the whole run, seconds")
    p.add_argument("--request-timeout", type=float, default=20.0, help="bound on each request, seconds")
    p.add_argument("--long-duration", type=float, default=2.0, help="trigger-long-running-operation duration, s")
    p.add_argument("--long-steps", type=int, default=4, help="trigger-long-running-operation steps")
    p.add_argument("--skip-elicitation", action="store_true")
    p.add_argument("--cafile", help="https:// URLs: trust the authorities in this PEM file (and only them)")
    p.add_argument("--http2", action="store_true",
                   help="offer HTTP/2 by ALPN (https://); each response's version is in http_log")
    args = p.parse_args()
    try:
        args.call_arguments = json.loads(args.args)
        args.stdio_arguments = json.loads(args.stdio_args)
    except json.JSONDecodeError as e:
        p.error(f"--args / --stdio-args: bad JSON: {e}")
    if not isinstance(args.call_arguments, dict):
        p.error("--args must be a JSON object")
    if not isinstance(args.stdio_arguments, list) or not all(isinstance(a, str) for a in args.stdio_arguments):
        p.error("--stdio-args must be a JSON array of strings")
    return args


def call_summary(tool: str, result: types.CallToolResult) -> dict[str, Any]:
    """What generic mode prints of one tools/call result."""
    return {
        "tool": tool,
        "is_error": bool(result.is_error),
        "text": text_of(result),
        "structured_content": result.structured_content,
        "meta": result.model_dump(by_alias=True, exclude_none=True).get("_meta"),
    }


def text_of(result: types.CallToolResult) -> str:
    parts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    return "\n".join(parts)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    summary: dict[str, Any] = {"client": "python-mcp", "transport": args.transport, "url": args.url}
    http_log: list[dict[str, Any]] = []
    counters = {"progress_callback": 0, "progress_notifications": 0, "sampling_requests": 0,
                "elicitation_requests": 0, "other_notifications": 0}
    progress_values: list[float] = []
    notification_methods: dict[str, int] = {}

    async def on_request(request: httpx2.Request) -> None:
        entry: dict[str, Any] = {"http": request.method, "path": request.url.raw_path.decode("ascii", "replace")}
        if request.method == "POST":
            try:
                body = json.loads(request.content)
                if isinstance(body, dict):
                    entry["rpc"] = body.get("method") or ("response" if "id" in body else None)
                    if body.get("method") == "initialize":
                        entry["requested_version"] = body.get("params", {}).get("protocolVersion")
            except Exception:  # a streamed or non-JSON body: record the HTTP line only
                pass
        pv = request.headers.get("mcp-protocol-version")
        if pv:
            entry["mcp-protocol-version"] = pv
        http_log.append(entry)
        request.extensions["py_client_log"] = entry

    async def on_response(response: httpx2.Response) -> None:
        entry = response.request.extensions.get("py_client_log")
        if entry is not None:
            entry["status"] = response.status_code
            entry["http_version"] = response.http_version

    def http_client(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                    auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        tls: dict[str, Any] = {}
        if args.cafile:
            tls["verify"] = ssl.create_default_context(cafile=args.cafile)
        if args.http2:
            tls["http2"] = True
        return httpx2.AsyncClient(
            **tls,
            headers=headers,
            timeout=timeout or httpx2.Timeout(args.request_timeout, read=args.timeout),
            auth=auth,
            trust_env=False,  # loopback only: never route through an environment proxy
            event_hooks={"request": [on_request], "response": [on_response]},
        )

    async def sampling_callback(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        counters["sampling_requests"] += 1
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLING_REPLY),
            model=SAMPLING_MODEL,
            stop_reason="endTurn",
        )

    async def elicitation_callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        counters["elicitation_requests"] += 1
        return types.ElicitResult(action="accept", content=dict(ELICITATION_CONTENT))

    async def list_roots_callback(context: Any) -> types.ListRootsResult:
        counters["roots_requests"] = counters.get("roots_requests", 0) + 1
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="py-client root")])

    async def message_handler(message: Any) -> None:
        if isinstance(message, Exception):
            summary.setdefault("transport_errors", []).append(repr(message))
            return
        method = getattr(getattr(message, "root", message), "method", None) or type(message).__name__
        notification_methods[method] = notification_methods.get(method, 0) + 1
        if isinstance(message, types.ProgressNotification):
            counters["progress_notifications"] += 1
        else:
            counters["other_notifications"] += 1

    async def progress_callback(progress: float, total: float | None, message: str | None) -> None:
        counters["progress_callback"] += 1
        progress_values.append(progress)

    if args.transport == "streamable":
        transport = streamable_http_client(args.url, http_client=http_client())
    elif args.transport == "stdio":
        transport = stdio_client(StdioServerParameters(command=args.url, args=args.stdio_arguments))
    else:
        transport = sse_client(args.url, timeout=args.request_timeout, sse_read_timeout=args.timeout,
                               httpx_client_factory=http_client)

    async def everything_steps() -> None:
        """Steps 3-6, against server-everything (its tools `echo` and `trigger-*`)."""
        nonlocal step
        step = "tools/call echo"
        echo = await client.call_tool("echo", {"message": "hello from py_client"})
        if echo.is_error or text_of(echo) != "Echo: hello from py_client":
            raise StepFailed(f"unexpected echo result: {echo.model_dump(mode='json', by_alias=True)}")
        summary["echo"] = text_of(echo)

        step = "tools/call trigger-sampling-request (sampling/createMessage round trip)"
        sampled = await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 16})
        sampled_text = text_of(sampled)
        if sampled.is_error or SAMPLING_REPLY not in sampled_text or counters["sampling_requests"] != 1:
            raise StepFailed(f"sampling round trip failed (requests={counters['sampling_requests']}): "
                             f"{sampled_text!r}")
        summary["sampling_result_text"] = sampled_text

        if not args.skip_elicitation:
            step = "tools/call trigger-elicitation-request (elicitation/create round trip)"
            elicited = await client.call_tool("trigger-elicitation-request", {})
            elicited_text = text_of(elicited)
            if elicited.is_error or "Gateway Tester" not in elicited_text or counters["elicitation_requests"] != 1:
                raise StepFailed(f"elicitation round trip failed (requests={counters['elicitation_requests']}): "
                                 f"{elicited_text!r}")
            summary["elicitation_result_text"] = elicited_text

        step = "tools/call trigger-long-running-operation with progress token"
        long = await client.call_tool(
            "trigger-long-running-operation",
            {"duration": args.long_duration, "steps": args.long_steps},
            read_timeout_seconds=args.long_duration + args.request_timeout,
            progress_callback=progress_callback,
        )
        if long.is_error:
            raise StepFailed(f"long-running operation returned an error: {text_of(long)!r}")
        summary["long_running_result_text"] = text_of(long)
        summary["progress_expected"] = args.long_steps
        summary["progress_received"] = counters["progress_notifications"]
        summary["progress_callbacks"] = counters["progress_callback"]
        summary["progress_values"] = progress_values
        if counters["progress_notifications"] != args.long_steps or counters["progress_callback"] != args.long_steps:
            raise StepFailed(f"received {counters['progress_notifications']} notifications/progress "
                             f"({counters['progress_callback']} progress callbacks), expected {args.long_steps}")

        step = "resources/list"
        resources = await client.list_resources()
        summary["resource_count"] = len(resources.resources)
        summary["resources_next_cursor"] = resources.next_cursor
        summary["resource_uris_first"] = [r.uri for r in resources.resources[:3]]

    client = Client(
        transport,
        mode=args.mode,
        read_timeout_seconds=args.request_timeout,
        sampling_callback=sampling_callback,
        elicitation_callback=None if args.skip_elicitation else elicitation_callback,
        list_roots_callback=list_roots_callback if args.roots else None,
        message_handler=message_handler,
        client_info=types.Implementation(name="mcp-ui-gateway-py-client", version="0.1.0"),
        cache=None,
    )

    step = "connect (discover/initialize)"
    t0 = time.monotonic()
    try:
        async with client:
            summary["protocol_version"] = client.protocol_version
            session = client.session
            summary["negotiation"] = (
                "pinned" if args.mode not in ("auto", "legacy")
                else "initialize" if getattr(session, "initialize_result", None) is not None
                else "discover" if getattr(session, "discover_result", None) is not None else "unknown"
            )
            info = client.server_info
            summary["server_info"] = {"name": info.name, "version": info.version} if info else None

            step = "tools/list"
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            summary["tools"] = names
            summary["tool_count"] = len(names)

            if args.call is not None:
                summary["tool_meta"] = {
                    t.name: t.model_dump(by_alias=True, exclude_none=True).get("_meta") for t in tools.tools
                }
                call_arguments = args.call_arguments
                if args.data_tool is not None:
                    step = f"tools/call {args.data_tool}"
                    data = await client.call_tool(args.data_tool, args.call_arguments)
                    summary["data_call"] = call_summary(args.data_tool, data)
                    if data.is_error or data.structured_content is None:
                        raise StepFailed(f"data tool {args.data_tool} returned no structured content: {text_of(data)}")
                    call_arguments = data.structured_content
                step = f"tools/call {args.call}"
                called = await client.call_tool(args.call, call_arguments)
                summary["call"] = call_summary(args.call, called)
                summary["then"] = []
                for tool in args.then:
                    step = f"tools/call {tool}"
                    summary["then"].append(call_summary(tool, await client.call_tool(tool, {})))
            else:
                await everything_steps()
            step = "close"
    except StepFailed:
        raise
    except anyio.get_cancelled_exc_class():
        CURRENT["step"] = step
        raise  # the run's deadline (fail_after) turns this into TimeoutError
    except BaseException as e:  # noqa: BLE001 - report any failure with the step it happened in
        if isinstance(e, BaseExceptionGroup):
            leaves = []
            def walk(g: BaseException) -> None:
                if isinstance(g, BaseExceptionGroup):
                    for x in g.exceptions:
                        walk(x)
                else:
                    leaves.append(g)
            walk(e)
            detail = "; ".join(f"{type(x).__name__}: {x}" for x in leaves)
        else:
            detail = f"{type(e).__name__}: {e}"
        raise StepFailed(f"{step}: {detail}") from e

    summary["sampling_requests"] = counters["sampling_requests"]
    summary["elicitation_requests"] = counters["elicitation_requests"]
    summary["roots_requests"] = counters.get("roots_requests", 0)
    summary["notifications_via_message_handler"] = notification_methods
    summary["http_log"] = http_log
    summary["elapsed_s"] = round(time.monotonic() - t0, 3)
    return summary


def main() -> int:
    args = parse_args()
    result: dict[str, Any] = {}

    async def bounded() -> None:
        with anyio.fail_after(args.timeout):
            result.update(await run(args))

    try:
        anyio.run(bounded)
    except TimeoutError:
        print(f"py_client: FAILED at {CURRENT['step']}: timed out after {args.timeout} s (--timeout)",
              file=sys.stderr)
        return 1
    except StepFailed as e:
        print(f"py_client: FAILED at {e}", file=sys.stderr)
        return 1
    except BaseException as e:  # noqa: BLE001
        print(f"py_client: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=None, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
