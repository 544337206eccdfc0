"""A minimal stdio MCP server whose tools answer results too large or too deep to
show whole: for the tests of the built-in widgets and `/preview` against them
(`tests/preview.rs`).

    python3 tests/preview/big_results.py [--initialize-delay SECONDS]

`rows {count}` answers `structuredContent.rows`, `count` records of a name, a
link and a number (100,000 make about 8 MB); `nested {depth}` answers
`structuredContent.rows` holding one record whose `name` is an object nested
`depth` levels deep. The JSON is written by hand, so any depth goes out.
With `--initialize-delay`, `initialize` is answered that many seconds late (a
server slow to start).
"""

import json
import sys
import time

INITIALIZE_DELAY = 0.0

TOOLS = [
    {
        "name": "rows",
        "description": "Answer `count` records.",
        "inputSchema": {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    },
    {
        "name": "nested",
        "description": "Answer one record whose name is nested `depth` levels deep.",
        "inputSchema": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
            "required": ["depth"],
        },
    },
]


def rows(count):
    items = ",".join(
        json.dumps({"name": f"row {i}", "site": f"https://example.com/r/{i}", "n": i})
        for i in range(count)
    )
    return '{"rows":[' + items + "]}"


def nested(depth):
    return '{"rows":[{"name":' + '{"a":' * depth + "1" + "}" * depth + ',"n":1}]}'


def call(params):
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "rows":
        structured = rows(int(args.get("count", 0)))
    elif name == "nested":
        structured = nested(int(args.get("depth", 0)))
    else:
        return None
    text = json.dumps(f"{name} answered {len(structured)} bytes")
    return '{"content":[{"type":"text","text":' + text + '}],"structuredContent":' + structured + "}"


def answer(method, params):
    if method == "initialize":
        time.sleep(INITIALIZE_DELAY)
        return json.dumps({
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "big-results", "version": "1"},
        })
    if method == "tools/list":
        return json.dumps({"tools": TOOLS})
    if method == "tools/call":
        return call(params)
    if method == "ping":
        return "{}"
    return None


def main():
    global INITIALIZE_DELAY
    if sys.argv[1:2] == ["--initialize-delay"]:
        INITIALIZE_DELAY = float(sys.argv[2])
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message or "method" not in message:
            continue
        result = answer(message["method"], message.get("params") or {})
        ident = json.dumps(message["id"])
        if result is None:
            out = '{"jsonrpc":"2.0","id":' + ident + ',"error":{"code":-32601,"message":"not found"}}'
        else:
            out = '{"jsonrpc":"2.0","id":' + ident + ',"result":' + result + "}"
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
