#!/usr/bin/env bash
# Start @modelcontextprotocol/server-everything (2026.8.31, from tests/peers/node_modules).
#
#   tests/peers/everything.sh streamableHttp PORT   -> http://127.0.0.1:PORT/mcp
#   tests/peers/everything.sh sse PORT              -> http://127.0.0.1:PORT/sse (POSTs go to /message?sessionId=...)
#   tests/peers/everything.sh stdio                 -> MCP over this process's stdin/stdout
#
# The server reads its port from the PORT environment variable (default 3001) and
# its transport from its first argument. It would bind all interfaces; the
# loopback.cjs preload forces 127.0.0.1 and prints
# "[loopback] listening on 127.0.0.1:PORT" on stderr once the socket is bound.
# PORT 0 lets the system pick a free port: that line then names the real one.
# The script execs node, so its PID is the server's PID: stop it with
# `kill -TERM <pid>`. Node is $NODE if set, else the `node` on PATH (Node >= 18).
# In streamableHttp mode the server logs each request on stdout; in sse mode on stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MAIN="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE="${NODE:-node}"

usage() { echo "usage: $0 streamableHttp|sse PORT   or   $0 stdio" >&2; exit 2; }

[[ $# -ge 1 ]] || usage
MODE="$1"
[[ -f "$MAIN" ]] || { echo "$0: $MAIN missing; run scripts/install-peers.sh" >&2; exit 1; }

case "$MODE" in
  streamableHttp|sse)
    [[ $# -eq 2 && "$2" =~ ^[0-9]+$ ]] || usage
    export PORT="$2"
    exec "$NODE" --require "$HERE/loopback.cjs" "$MAIN" "$MODE"
    ;;
  stdio)
    [[ $# -le 2 ]] || usage
    exec "$NODE" "$MAIN" stdio
    ;;
  *) usage ;;
esac
