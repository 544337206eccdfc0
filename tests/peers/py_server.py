"""A legacy-style server built with the official Python SDK (`mcp`, its `MCPServer`, the
former FastMCP), over stdio. Every tool returns a string, so the SDK lists the outputSchema
`{"result": string}` and wraps each result as `structuredContent: {"result": "<the text>"}`:
what `tests/peers.rs` shapes through the gateway.

    tests/peers/.venv/bin/python tests/peers/py_server.py                     # stdio
    tests/peers/.venv/bin/python tests/peers/py_server.py --sse               # legacy HTTP+SSE
    tests/peers/.venv/bin/python tests/peers/py_server.py --http              # streamable HTTP, sessions
    tests/peers/.venv/bin/python tests/peers/py_server.py --http --stateless  # streamable HTTP, none

With `--sse` or `--http` it serves on 127.0.0.1, on a port the system picks, and prints
`READY http://127.0.0.1:PORT/sse` (or `/mcp`) once listening.

- `list_tasks`: JSON text of an object with a `tasks` array.
- `count_tasks`: JSON text `{"count": N}`.
- `get_task`: JSON text of one task.
- `greet(name)`: plain text, not JSON.
"""

import json
import sys

from mcp.server.mcpserver import MCPServer

TASKS = [{"id": 1, "title": "Write the overlay", "done": False}, {"id": 2, "title": "Ship", "done": True}]

app = MCPServer("py-legacy-tasks")


@app.tool()
def list_tasks() -> str:
    """All tasks, as JSON text."""
    return json.dumps({"tasks": TASKS})


@app.tool()
def count_tasks() -> str:
    """How many tasks there are, as JSON text."""
    return json.dumps({"count": len(TASKS)})


@app.tool()
def get_task() -> str:
    """The first task, as JSON text."""
    return json.dumps(TASKS[0])


@app.tool()
def greet(name: str) -> str:
    """A greeting, as plain text."""
    return f"Hello, {name}!"


def serve_http(asgi, path):
    import socket

    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning"))
    print(f"READY http://127.0.0.1:{port}{path}", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--sse" in args:
        serve_http(app.sse_app(host="127.0.0.1"), "/sse")
    elif "--http" in args:
        stateless = "--stateless" in args
        serve_http(app.streamable_http_app(stateless_http=stateless, host="127.0.0.1"), "/mcp")
    else:
        app.run()
