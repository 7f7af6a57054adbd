"""What the Python SDK clients (``python_client.py``, ``python_oauth.py``) share.

Reading a connected ``mcp.Client`` (every tool name, the negotiated protocol, a result's
first text), and the one way they end: exactly one JSON line on stdout and exit 0, or the
error on stderr and exit 1.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Any


async def list_tool_names(client: Any) -> list[str]:
    """Every tool's name, following ``next_cursor`` (at most 100 pages)."""
    names: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        names.extend(t.name for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return names


def protocol_of(client: Any) -> str | None:
    """The protocol version the client negotiated, or None when it has none."""
    try:
        return client.protocol_version
    except Exception:
        return None


def first_text(result: Any) -> str | None:
    """The text of a tool result's first text block."""
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return None


def print_report(name: str, make_report: Callable[[], dict[str, Any]]) -> int:
    """Prints the report ``make_report`` returns as one JSON line and returns 0; on any
    failure prints the error (named ``name``) and its traceback to stderr and returns 1."""
    try:
        out = make_report()
    except BaseException as exc:  # noqa: BLE001 - any failure is a test failure
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        # Unwrap exception groups from anyio task groups so the real cause is printed.
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        print(f"{name} error: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0
