# Gunicorn configuration of IBM ContextForge (PyPI mcp-contextforge-gateway,
# installed by scripts/install-bench-peers.sh) in front of the load bench's
# upstream: what its container runs (run-gunicorn.sh with gunicorn.config.py:
# uvicorn workers, the app preloaded, each worker's inherited database
# connections dropped after the fork), with one worker per core on 127.0.0.1.
# The gateway's own settings are environment variables (benches/load/contextforge.rs).
#
#   gunicorn -c contextforge.gunicorn.py mcpgateway.main:app
bind = "127.0.0.1:@PORT@"
workers = @WORKERS@
worker_class = "uvicorn.workers.UvicornWorker"
timeout = 600
# Idle keep-alive connections are closed after this many seconds (gunicorn's
# default, 2, is meant for a proxy in front): each bench session holds one
# connection, as an MCP host's backend does, and a session may wait longer
# than 2 s for the others of its point to warm up. nginx's default is 75.
keepalive = 75
max_requests = 100000
max_requests_jitter = 100
preload_app = True
loglevel = "warning"


def post_fork(server, worker):
    # A forked worker must not share the master's SQLite connections.
    from mcpgateway.db import engine

    engine.dispose(close=False)
