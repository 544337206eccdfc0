"""A minimal stdio MCP server whose listings come in pages: tools two to a page and
resources three to a page, the cursor being the next index. For the tests of an app
endpoint (`tests/apps.rs`), whose listings carry a member's cursor inside their own.

    python3 tests/peers/paged_server.py

Tools `paged_0` .. `paged_4` answer their own name; resources `paged://r/0` .. `/6`.
"""

import json
import sys

TOOLS = [
    {"name": f"paged_{i}", "description": f"Tool {i}", "inputSchema": {"type": "object"}}
    for i in range(5)
]
RESOURCES = [{"uri": f"paged://r/{i}", "name": f"r{i}", "mimeType": "text/plain"} for i in range(7)]


def page(items, key, params, size):
    start = int((params or {}).get("cursor") or 0)
    result = {key: items[start : start + size]}
    if start + size < len(items):
        result["nextCursor"] = str(start + size)
    return result


def answer(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "paged", "version": "1"},
            "instructions": "Pages of tools and resources.",
        }
    if method == "tools/list":
        return page(TOOLS, "tools", params, 2)
    if method == "resources/list":
        return page(RESOURCES, "resources", params, 3)
    if method == "resources/read":
        return {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": params["uri"]}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": params["name"]}]}
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue
    result = answer(msg["method"], msg.get("params") or {})
    if result is None:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    else:
        out = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
