#!/usr/bin/env sh
# Starts the local OpenID provider (provider.mjs), installing it first when needed:
# `npm ci` from this directory's package-lock.json into its node_modules.
#
#   examples/oauth-local/run.sh [--port 9090] [--gateway http://127.0.0.1:8787]
#
# Needs Node.js with npm: 22 or later (20 works, with a warning from oidc-provider).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f "$here/node_modules/oidc-provider/package.json" ] ||
    [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
    echo "Installing oidc-provider into $here/node_modules (npm ci)…" >&2
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
fi
exec node "$here/provider.mjs" "$@"
