#!/usr/bin/env python3
"""A stdio MCP server for the telemetry test: answers initialize, lists one
tool `echo_meta`, and answers every tools/call with the `params._meta` it
received (as JSON text), so a test can see the trace context a stdio
upstream gets. Standard library only."""

import json
import sys


def answer(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m or "method" not in m:
        continue
    method, params = m["method"], m.get("params") or {}
    if method == "initialize":
        answer(m["id"], {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-meta", "version": "1"},
        })
    elif method == "tools/list":
        answer(m["id"], {"tools": [{"name": "echo_meta", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        text = json.dumps(params.get("_meta"))
        answer(m["id"], {"content": [{"type": "text", "text": text}]})
    else:
        answer(m["id"], {})
