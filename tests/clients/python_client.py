#!/usr/bin/env python3
"""Drive an MCP server with the official Python SDK client (mcp==2.3.0).

Usage:
    python_client.py URL MODE [--tool NAME] [--args JSON] [--callbacks]

MODE is passed to ``mcp.Client(mode=...)``: a modern protocol version such as
``2026-07-28`` (adopted directly, no probe), ``auto`` (probe ``server/discover``,
fall back to ``initialize``) or ``legacy`` (``initialize`` handshake only).

Lists tools, then calls ``--tool`` (default ``test_simple_text``, only if listed;
an explicit ``--tool`` is always called) and prints exactly one JSON line:

    {"tools": [...], "text": str|null, "is_error": bool|null, "protocol": str|null,
     "via": "discover"|"initialize"|"adopt"|null}

Exit 0 on success; on any exception the error goes to stderr and the exit code is 1.
In ``auto`` mode a silent fallback from ``server/discover`` to ``initialize`` is
reported on stderr with the reason (the SDK swallows it otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import mcp.client.client as mcp_client_module
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sdk_common import first_text, list_tool_names, print_report, protocol_of

DEFAULT_TOOL = "test_simple_text"

# What happened during the auto-mode discover probe, for diagnostics.
_probe_log: list[str] = []


def _install_probe_tracer() -> None:
    """Wrap the SDK's auto negotiation so a discover→initialize fallback is visible."""
    original = mcp_client_module.negotiate_auto

    async def traced(session: Any) -> None:
        send_discover = session.send_discover

        async def wrapped_send_discover(version: str) -> dict[str, Any]:
            try:
                raw = await send_discover(version)
            except Exception as exc:  # recorded, then re-raised unchanged
                _probe_log.append(f"server/discover({version}) raised {type(exc).__name__}: {exc}")
                raise
            import mcp_types
            from pydantic import ValidationError

            try:
                mcp_types.DiscoverResult.model_validate(raw)
            except ValidationError as exc:
                _probe_log.append(
                    f"server/discover({version}) result rejected by DiscoverResult validation: {exc}; "
                    f"raw={json.dumps(raw)[:2000]}"
                )
            return raw

        session.send_discover = wrapped_send_discover
        try:
            await original(session)
        finally:
            del session.send_discover

    mcp_client_module.negotiate_auto = traced


def _callbacks(elicit_yes: bool = False) -> dict[str, Any]:
    """Canned sampling / elicitation / roots handlers (``--callbacks``) for the input-required fixtures.

    A form question's booleans take their default (``--elicit-yes``: true, a person saying yes)."""
    import mcp_types as types

    async def sampling(_ctx: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled response"), model="test-model"
        )

    async def elicitation(_ctx: Any, params: Any) -> Any:
        content: dict[str, Any] = {}
        schema = getattr(params, "requested_schema", None) or {}
        for key, prop in (schema.get("properties") or {}).items():
            kind = prop.get("type")
            if kind == "boolean" and elicit_yes:
                content[key] = True
            elif "default" in prop:
                content[key] = prop["default"]
            elif prop.get("enum"):
                content[key] = prop["enum"][0]
            elif kind == "boolean":
                content[key] = True
            elif kind in ("number", "integer"):
                content[key] = 1
            else:
                content[key] = "test"
        return types.ElicitResult(action="accept", content=content)

    async def list_roots(_ctx: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/mirobody-test", name="test-root")])

    return {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": list_roots}


async def run(
    url: str,
    mode: str,
    tool: str,
    tool_args: dict[str, Any],
    force_call: bool,
    callbacks: bool,
    elicit_yes: bool = False,
) -> dict[str, Any]:
    transport = streamable_http_client(url)
    extra = _callbacks(elicit_yes) if callbacks else {}
    async with Client(transport, mode=mode, raise_exceptions=True, read_timeout_seconds=30.0, **extra) as client:
        session = client.session
        if session.discover_result is not None:
            via = "discover" if mode == "auto" else "adopt"
        elif session.initialize_result is not None:
            via = "initialize"
        else:
            via = None
        if mode == "auto" and via == "initialize" and _probe_log:
            print("auto mode fell back to initialize: " + " | ".join(_probe_log), file=sys.stderr)

        names = await list_tool_names(client)

        text: str | None = None
        is_error: bool | None = None
        if force_call or tool in names:
            result = await client.call_tool(tool, tool_args)
            text = first_text(result)
            is_error = bool(result.is_error)

        return {"tools": names, "text": text, "is_error": is_error, "protocol": protocol_of(client), "via": via}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("mode", help="2026-07-28 | auto | legacy")
    parser.add_argument("--tool", default=None, help=f"tool to call (default {DEFAULT_TOOL}, only if listed)")
    parser.add_argument("--args", default="{}", help="JSON object of tool arguments")
    parser.add_argument(
        "--callbacks", action="store_true", help="advertise sampling/elicitation/roots with canned answers"
    )
    parser.add_argument(
        "--elicit-yes", action="store_true", help="with --callbacks: answer a form's yes/no questions yes"
    )
    ns = parser.parse_args()

    def report() -> dict[str, Any]:
        tool_args = json.loads(ns.args)
        if not isinstance(tool_args, dict):
            raise ValueError("--args must be a JSON object")
        if ns.mode == "auto":
            _install_probe_tracer()
        return asyncio.run(
            run(
                ns.url,
                ns.mode,
                ns.tool or DEFAULT_TOOL,
                tool_args,
                ns.tool is not None,
                ns.callbacks,
                ns.elicit_yes,
            )
        )

    return print_report("python_client", report)


if __name__ == "__main__":
    sys.exit(main())
