"""A 2025-era MCP server for the revision tests (tests/revision/): written the way servers
were written before the 2026-07-28 revision, with tools that send the server-to-client
requests that revision removed (elicitation, sampling, roots) in the middle of a call.
A gateway translating 2026-07-28 for such a server must turn each of them into an
`input_required` round.

    tests/peers/.venv/legacy/bin/python tests/peers/legacy_server.py [--transport stdio|sse|streamable-http] [--port N]

Runs with mcp 1.30 (the legacy venv, `mcp.server.fastmcp.FastMCP`: initialize handshake
only, up to 2025-11-25) and, for comparison, with mcp 2.3 (tests/peers/.venv, where FastMCP
is `mcp.server.mcpserver.MCPServer` and stdio and streamable HTTP also speak 2026-07-28).
Over `sse` (GET /sse) or `streamable-http` (/mcp) it listens on 127.0.0.1 only, on `--port`
(0, the default: a port the system picks) and prints `READY http://127.0.0.1:PORT/sse` (or
`/mcp`) on stdout once listening.

Tools:
- `get_time(timezone="UTC")`: the fixed text `time in <timezone>: 2025-01-01T00:00:00`.
- `ask_name`: elicits `{"name": string}`; returns `Hello, <name>` or `declined`.
- `ask_model`: samples one message; returns the sampled text.
- `list_roots`: returns the client's root URIs joined with a space.
- `ask_twice`: two elicitations in sequence; returns `first=<a> second=<b>`.
- `ask_both`: an elicitation then a sampling; returns `name=<name> model=<text>`.
- `add_tool(name="added_tool")`: registers a tool of that name (returning `added`) and
  sends `notifications/tools/list_changed`.
- `touch_counter`: increments the resource `legacy://counter` (text `count=<n>`) and sends
  `notifications/resources/updated` for it.

A call of the tools that ask their client something, cancelled (`notifications/cancelled`),
is noted on stderr as `legacy_server: cancelled <tool>`.

Resources: `legacy://counter`. Under mcp 1.30 the server declares `resources.subscribe`
(FastMCP 1.x hard-codes it false; this script declares it and accepts
`resources/subscribe` and `resources/unsubscribe`, noting them on stderr).

`--stateless` (streamable-http only) serves without sessions (FastMCP's `stateless_http`).
"""

import argparse
import functools
import sys

import anyio

from mcp import types
from pydantic import BaseModel

try:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP
except ImportError:  # mcp 2.x: FastMCP renamed MCPServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP

app = FastMCP("legacy-test-server")


class Name(BaseModel):
    name: str


# The value of `legacy://counter`.
COUNTER = {"value": 0}
COUNTER_URI = "legacy://counter"


def note(line: str) -> None:
    print(f"legacy_server: {line}", file=sys.stderr, flush=True)


def records_cancellation(fn):
    """Notes a cancelled call of `fn` on stderr, then lets it end."""

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except anyio.get_cancelled_exc_class():
            note(f"cancelled {fn.__name__}")
            raise

    return wrapper


async def elicit_name(ctx: Context, message: str) -> str:
    answer = await ctx.elicit(message, Name)
    return answer.data.name if answer.action == "accept" else "declined"


async def sample(ctx: Context, prompt: str) -> str:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    result = await ctx.session.create_message([message], max_tokens=32)
    content = result.content
    return content.text if isinstance(content, types.TextContent) else str(content)


@app.tool()
def get_time(timezone: str = "UTC") -> str:
    """A fixed time in the given timezone (deterministic, for comparisons)."""
    return f"time in {timezone}: 2025-01-01T00:00:00"


@app.tool()
@records_cancellation
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name (one elicitation)."""
    name = await elicit_name(ctx, "What is your name?")
    return "declined" if name == "declined" else f"Hello, {name}"


@app.tool()
@records_cancellation
async def ask_model(ctx: Context) -> str:
    """Asks the client's model for one message (one sampling request)."""
    return await sample(ctx, "Say hello in one word.")


@app.tool()
@records_cancellation
async def list_roots(ctx: Context) -> str:
    """The client's roots (one roots/list request)."""
    result = await ctx.session.list_roots()
    return " ".join(str(root.uri) for root in result.roots)


@app.tool()
@records_cancellation
async def ask_twice(ctx: Context) -> str:
    """Two elicitations in sequence: two input rounds."""
    first = await elicit_name(ctx, "First name?")
    second = await elicit_name(ctx, "Second name?")
    return f"first={first} second={second}"


@app.tool()
@records_cancellation
async def ask_both(ctx: Context) -> str:
    """An elicitation, then a sampling request."""
    name = await elicit_name(ctx, "What is your name?")
    text = await sample(ctx, f"Greet {name}.")
    return f"name={name} model={text}"


async def tools_changed(ctx: Context) -> None:
    if hasattr(ctx, "notify_tools_changed"):  # mcp 2.x
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()


async def resource_updated(ctx: Context, uri: str) -> None:
    if hasattr(ctx, "notify_resource_updated"):  # mcp 2.x
        await ctx.notify_resource_updated(uri)
    else:
        from pydantic import AnyUrl

        await ctx.session.send_resource_updated(AnyUrl(uri))


@app.tool()
async def add_tool(ctx: Context, name: str = "added_tool") -> str:
    """Registers a new tool and announces it (notifications/tools/list_changed)."""

    def added() -> str:
        return "added"

    app.add_tool(added, name=name, description=f"Added at run time as {name}.")
    await tools_changed(ctx)
    return f"added {name}"


@app.resource(COUNTER_URI, name="counter", mime_type="text/plain")
def counter() -> str:
    """A counter that touch_counter increments."""
    return f"count={COUNTER['value']}"


@app.tool()
async def touch_counter(ctx: Context) -> str:
    """Increments legacy://counter and announces it (notifications/resources/updated)."""
    COUNTER["value"] += 1
    await resource_updated(ctx, COUNTER_URI)
    return f"count={COUNTER['value']}"


def declare_subscribe() -> None:
    """mcp 1.x: accept resources/subscribe and say so in the capabilities (FastMCP 1.x
    declares `subscribe: false` whatever handlers it has). mcp 2.x serves subscriptions
    through `subscriptions/listen` by itself."""
    low = getattr(app, "_mcp_server", None)
    if low is None or not hasattr(low, "subscribe_resource"):
        return

    @low.subscribe_resource()
    async def subscribe(uri) -> None:
        note(f"subscribed {uri}")

    @low.unsubscribe_resource()
    async def unsubscribe(uri) -> None:
        note(f"unsubscribed {uri}")

    capabilities = low.get_capabilities

    def get_capabilities(*args, **kwargs):
        caps = capabilities(*args, **kwargs)
        if caps.resources is not None:
            caps.resources.subscribe = True
        return caps

    low.get_capabilities = get_capabilities


declare_subscribe()


def serve_http(asgi, path: str, port: int) -> None:
    import socket

    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning"))
    print(f"READY http://127.0.0.1:{port}{path}", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=["stdio", "sse", "streamable-http"], default="stdio")
    p.add_argument("--port", type=int, default=0, help="sse/streamable-http: port on 127.0.0.1 (0: any free one)")
    p.add_argument("--stateless", action="store_true", help="streamable-http: no sessions (stateless_http)")
    args = p.parse_args()
    if args.transport == "stdio":
        app.run()
        return
    # mcp 1.x takes the host from the server's settings, 2.x as an argument; with
    # 127.0.0.1 both accept only Host/Origin 127.0.0.1 and localhost (DNS rebinding).
    kwargs = {} if hasattr(app, "settings") else {"host": "127.0.0.1"}
    if args.transport == "sse":
        serve_http(app.sse_app(**kwargs), "/sse", args.port)
    else:
        if args.stateless:
            if hasattr(app, "settings"):  # mcp 1.x
                app.settings.stateless_http = True
            else:
                kwargs["stateless_http"] = True
        serve_http(app.streamable_http_app(**kwargs), "/mcp", args.port)


if __name__ == "__main__":
    main()
