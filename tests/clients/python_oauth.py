#!/usr/bin/env python3
"""The official Python SDK's OAuth support (mcp==2.3.0) against the server's authorization server.

Usage:
    python_oauth.py BASE_URL [--mode 2026-07-28|auto]

Signs up an account (POST /auth/signup), then connects ``mcp.Client`` to ``BASE_URL/mcp``
through an ``httpx2.AsyncClient`` whose auth is the SDK's ``OAuthClientProvider``. The SDK
runs OAuth when ``/mcp`` answers 401: it reads ``resource_metadata`` from ``WWW-Authenticate``,
fetches the protected resource and authorization server metadata, registers a public client
dynamically, and builds the authorization URL with PKCE S256. The test plays the user:

- the redirect handler receives the authorization URL, fetches the sign-in page with httpx2,
  reads its hidden inputs and its CSRF cookie, posts the form with the credentials and
  ``decision=allow``, and takes ``code``, ``state`` and ``iss`` from the 302 ``Location``
  (the redirect URI is never contacted);
- the callback handler returns them to the SDK, which exchanges the code and retries.

Then it lists tools and calls ``get_genetic_data`` with the authenticated client, and prints
exactly one JSON line:

    {"authorized": bool, "tools": [...], "text": str|null, "is_error": bool|null,
     "protocol": str|null, "scope": str|null, "has_refresh_token": bool,
     "client_registered": bool, "requests": ["GET /.well-known/...", ...],
     "browser_requests": ["GET /oauth/authorize 200", "POST /oauth/authorize 302"]}

``authorized`` says whether the SDK ran the authorization flow at all: it only does when the
server answers 401 (or 403 insufficient_scope), so against a server that serves anonymous
callers (tools/list, and a login prompt for data tools) it stays false.

Exit 0 on success; on any exception the error goes to stderr and the exit code is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from sdk_common import first_text, list_tool_names, print_report, protocol_of

PASSWORD = "correct horse battery staple"
# Registered, and echoed in the 302, but never connected to: the test reads the Location.
REDIRECT_URI = "http://127.0.0.1:33418/callback"
CSRF_COOKIE = "mirobody_csrf"
TIMEOUT = httpx2.Timeout(30.0)


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory."""

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


class SignInForm(HTMLParser):
    """The form's action and its hidden inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.hidden: dict[str, str] = {}
        self.inputs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action = a.get("action", "")
        elif tag == "input":
            if a.get("type") == "hidden" and "name" in a:
                self.hidden[a["name"]] = a.get("value", "")
            elif "id" in a:
                self.inputs.add(a["id"])
        elif tag == "button" and "id" in a:
            self.inputs.add(a["id"])


class Browser:
    """Plays the user at the authorization endpoint, without a browser."""

    def __init__(self, email: str) -> None:
        self.email = email
        self.authorization_url: str | None = None
        self.result: AuthorizationCodeResult | None = None
        self.requests: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False, trust_env=False) as http:
            page = await http.get(authorization_url)
            self.requests.append(f"GET {page.request.url.path} {page.status_code}")
            if page.status_code != 200:
                raise RuntimeError(f"the authorization page answered {page.status_code}: {page.text[:500]}")
            form = SignInForm()
            form.feed(page.text)
            missing = {"email", "password", "allow"} - form.inputs
            if form.action is None or missing or "csrf" not in form.hidden:
                raise RuntimeError(f"the authorization page has no usable form (missing {missing}): {page.text[:500]}")
            cookie = page.cookies.get(CSRF_COOKIE)
            if not cookie:
                raise RuntimeError("the authorization page set no CSRF cookie")
            fields = dict(form.hidden)
            fields.update(email=self.email, password=PASSWORD, decision="allow")
            answer = await http.post(
                urljoin(authorization_url, form.action),
                data=fields,
                headers={"cookie": f"{CSRF_COOKIE}={cookie}"},
            )
            self.requests.append(f"POST {answer.request.url.path} {answer.status_code}")
        location = answer.headers.get("location", "")
        if answer.status_code != 302 or not location.startswith(REDIRECT_URI + "?"):
            raise RuntimeError(f"the form post answered {answer.status_code} to {location!r}: {answer.text[:500]}")
        query = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
        if "error" in query:
            raise RuntimeError(f"the authorization response is an error: {query}")
        self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def callback_handler(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("the callback ran before the redirect handler completed the sign-in")
        return self.result


async def run(base: str, mode: str) -> dict[str, Any]:
    email = f"python-oauth-{secrets.token_hex(4)}@example.test"
    async with httpx2.AsyncClient(timeout=TIMEOUT, trust_env=False) as http:
        signup = await http.post(f"{base}/auth/signup", json={"email": email, "password": PASSWORD})
    if signup.status_code != 201:
        raise RuntimeError(f"/auth/signup answered {signup.status_code}: {signup.text}")

    browser = Browser(email)
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="mirobody python oauth e2e",
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    requests: list[str] = []

    async def record(request: httpx2.Request) -> None:
        requests.append(f"{request.method} {request.url.path}")

    http_client = httpx2.AsyncClient(
        auth=provider, timeout=TIMEOUT, trust_env=False, event_hooks={"request": [record]}
    )
    async with http_client:
        async with Client(
            streamable_http_client(f"{base}/mcp", http_client=http_client),
            mode=mode,
            raise_exceptions=True,
            read_timeout_seconds=30.0,
        ) as client:
            names = await list_tool_names(client)
            result = await client.call_tool("get_genetic_data", {"rsid": "rs429358"})
            protocol = protocol_of(client)

    tokens = storage.tokens
    return {
        "authorized": browser.result is not None,
        "tools": names,
        "text": first_text(result),
        "is_error": bool(result.is_error),
        "protocol": protocol,
        "scope": tokens.scope if tokens else None,
        "has_refresh_token": bool(tokens and tokens.refresh_token),
        "client_registered": storage.client_info is not None,
        "requests": requests,
        "browser_requests": browser.requests,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base_url")
    parser.add_argument("--mode", default="2026-07-28", help="2026-07-28 | auto")
    ns = parser.parse_args()
    base = ns.base_url.rstrip("/")
    if urlparse(base).hostname not in ("127.0.0.1", "localhost", "::1"):
        print(f"python_oauth error: BASE_URL must be a loopback URL, not {base}", file=sys.stderr)
        return 1
    return print_report("python_oauth", lambda: asyncio.run(run(base, ns.mode)))


if __name__ == "__main__":
    sys.exit(main())
