#!/usr/bin/env bash
# Install the load bench's MCP gateway peers, each pinned, each idempotent (a
# version stamp; later runs find it and do nothing):
#   mcp-proxy (crates.io), the Rust MCP gateway built on tower, built with its own
#     Cargo.lock (`cargo install --locked`) into tests/peers/.cargo-bench/bin; the
#     first build takes several minutes.
#   IBM ContextForge (PyPI mcp-contextforge-gateway) from
#     tests/peers/requirements-contextforge.lock (every dependency pinned by hash)
#     into the venv tests/peers/.venv-contextforge; it needs Python >= 3.12
#     (python3.12 or python3.13; PYTHON_CONTEXTFORGE=/path/to/python to choose one).
# The load bench (`cargo bench --bench load`) runs this before its sweep; the test
# suite does not need it. nginx and haproxy, the bench's other references, come
# from scripts/install-peers.sh.
#
#   scripts/install-bench-peers.sh                       both
#   scripts/install-bench-peers.sh --only contextforge   one: mcp-proxy or contextforge
#
# Exit status: 0 when what was asked for is installed; 3 when ContextForge alone is
# missing because no Python >= 3.12 was found (mcp-proxy is installed all the same);
# 1 on any other failure.
set -euo pipefail

MCP_PROXY_VERSION=0.6.0
CONTEXTFORGE_VERSION=1.1.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/tests/peers"

step() { printf '[install-bench-peers] %s\n' "$*"; }
fail() { printf '[install-bench-peers] ERROR: %s\n' "$*" >&2; }

ONLY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --only)
            [[ $# -ge 2 ]] || { fail "--only needs mcp-proxy or contextforge"; exit 2; }
            ONLY="$2"; shift 2 ;;
        --only=*) ONLY="${1#--only=}"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown argument $1 (see --help)"; exit 2 ;;
    esac
done
case "$ONLY" in
    ""|mcp-proxy|contextforge) ;;
    *) fail "--only $ONLY: the peers are mcp-proxy and contextforge"; exit 2 ;;
esac
want() { [[ -z "$ONLY" || "$ONLY" == "$1" ]]; }

install_mcp_proxy() {
    local dest="$PEERS/.cargo-bench"
    local bin="$dest/bin/mcp-proxy"
    if [[ -x $bin ]] && [[ "$(cat "$dest/.version" 2>/dev/null)" == "$MCP_PROXY_VERSION" ]]; then
        return 0
    fi
    command -v cargo >/dev/null || { fail "cargo not found"; return 1; }
    step "building mcp-proxy $MCP_PROXY_VERSION from crates.io (cargo install --locked; several minutes the first time) …"
    rm -f "$dest/.version"
    # Its own target folder, outside the project's, so the bench's build is untouched.
    timeout --kill-after=10 3600 cargo install --locked --quiet mcp-proxy \
        --version "$MCP_PROXY_VERSION" --root "$dest" --target-dir "$dest/build" || return 1
    rm -rf "$dest/build"
    echo "$MCP_PROXY_VERSION" >"$dest/.version"
    step "mcp-proxy $MCP_PROXY_VERSION installed: $bin"
}

# The first Python >= 3.12 found: $PYTHON_CONTEXTFORGE, python3.12, python3.13, then
# pyenv's installed versions (a pyenv shim of a version that is not selected fails
# to run, so each candidate is run, not only looked up).
find_python() {
    local candidates=("${PYTHON_CONTEXTFORGE:-}" python3.12 python3.13)
    if command -v pyenv >/dev/null; then
        local root
        root="$(pyenv root 2>/dev/null || true)"
        [[ -n $root ]] && candidates+=("$root"/versions/3.12*/bin/python3 "$root"/versions/3.13*/bin/python3)
    fi
    local c
    for c in "${candidates[@]}"; do
        [[ -n $c ]] || continue
        if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

install_contextforge() {
    local venv="$PEERS/.venv-contextforge"
    local lock="$PEERS/requirements-contextforge.lock"
    local stamp="$venv/.version"
    local want_stamp
    want_stamp="$CONTEXTFORGE_VERSION $(sha256sum "$lock" | cut -d' ' -f1)"
    if [[ -x "$venv/bin/gunicorn" ]] && [[ "$(cat "$stamp" 2>/dev/null)" == "$want_stamp" ]]; then
        return 0
    fi
    local python
    if ! python="$(find_python)"; then
        fail "ContextForge needs Python >= 3.12 and none was found (tried python3.12, python3.13 and pyenv's versions; set PYTHON_CONTEXTFORGE=/path/to/python3.12); ContextForge is not installed"
        return 3
    fi
    step "installing ContextForge $CONTEXTFORGE_VERSION into tests/peers/.venv-contextforge ($python, $("$python" -c 'import platform; print(platform.python_version())')) …"
    rm -rf "$venv"
    timeout --kill-after=10 120 "$python" -m venv "$venv" || return 1
    timeout --kill-after=10 900 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-input --no-deps --require-hashes --require-virtualenv -r "$lock" || return 1
    timeout --kill-after=10 120 "$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null \
        || { fail "pip check found missing or conflicting dependencies in requirements-contextforge.lock"; return 1; }
    local got
    got="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-contextforge-gateway"))')"
    [[ $got == "$CONTEXTFORGE_VERSION" ]] \
        || { fail "the lock installed mcp-contextforge-gateway $got, not $CONTEXTFORGE_VERSION"; return 1; }
    echo "$want_stamp" >"$stamp"
    step "ContextForge $CONTEXTFORGE_VERSION installed: $venv"
}

status=0
if want mcp-proxy; then
    install_mcp_proxy || status=1
fi
if want contextforge; then
    rc=0
    install_contextforge || rc=$?
    # No Python >= 3.12 (3) is reported as such unless something else failed.
    if [[ $rc -ne 0 && $status -eq 0 ]]; then
        status=$rc
    elif [[ $rc -ne 0 ]]; then
        status=1
    fi
fi
exit "$status"
