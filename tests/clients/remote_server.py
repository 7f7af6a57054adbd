#!/usr/bin/env python3
"""A user's external MCP server for the end-to-end tests (the second seed's example).

Usage:
    remote_server.py PORT [--token T] [--header NAME:VALUE] [--hang-file PATH] [--name N]
                          [--bulk K] [--metadata] [--long-name] [--trace-log PATH]
                          [--catalogue]

The Python SDK's MCPServer (mcp==2.3.0, both eras: 2026-07-28 and the 2025 handshake)
behind uvicorn on 127.0.0.1. With --token, requests need `Authorization: Bearer T`;
with --header, they need that header; otherwise 401. While --hang-file exists, every
request hangs (a server that stopped answering). Tools: lookup_order (annotated
read-only), create_ticket,
always_fails (raises, so the result is isError), stall (never finishes); with --bulk K,
also bulk_000 … (K tools, each with a 5 kB description: a listing that must be bounded).
With --metadata, also describe_order (a title, annotations, an output schema
and structured content) and big_result(size) (plain text of `size` bytes, no structured
content) and big_structured(size) (the same as structured content, with an output
schema); with --long-name, also a tool whose name is 200 characters long. With
--trace-log, each POST appends one JSON line to PATH: its JSON-RPC method, its `traceparent`
header, its `tracestate` header and its `params._meta.traceparent` (null when absent).
With --catalogue, also resources (`file:///shop/opening-hours.txt`, a text of known
words; `file:///shop/huge.txt`, 300 kB), a template (`orders://{number}`) and a prompt
(`order_help(order_number)`, one user message naming the order).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel

LONG_NAME = "long_" + "n" * 195


class OrderSummary(BaseModel):
    order_number: str
    status: str
    items: int


class Blob(BaseModel):
    data: str


def build(
    name: str, bulk: int = 0, metadata: bool = False, long_name: bool = False, catalogue: bool = False
) -> MCPServer:
    server = MCPServer(name=name, version="0.1")

    if catalogue:
        @server.resource(
            "file:///shop/opening-hours.txt",
            name="opening-hours",
            description="When the shop is open.",
            mime_type="text/plain",
        )
        def opening_hours() -> str:
            return "Open Monday to Friday, 9 to 17."

        @server.resource("file:///shop/huge.txt", name="huge", mime_type="text/plain")
        def huge() -> str:
            return "h" * 300_000

        @server.resource("orders://{number}", name="order", mime_type="text/plain")
        def order(number: str) -> str:
            return f"order {number}: shipped"

        @server.prompt(description="Ask for help with an order.")
        def order_help(order_number: str) -> str:
            return f"Please help me with order {order_number}."

    for i in range(bulk):
        def bulk_tool(i: int = i) -> str:
            return f"bulk {i}"

        server.add_tool(bulk_tool, name=f"bulk_{i:03}", description="d" * 5_000)

    @server.tool(
        description="Look up an order's status by its order number.",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def lookup_order(order_number: str) -> str:
        return f"order {order_number}: shipped"

    @server.tool(description="Open a support ticket.")
    def create_ticket(title: str) -> str:
        return f"ticket opened: {title}"

    @server.tool(description="Always fails.")
    def always_fails() -> str:
        raise ValueError("the warehouse is closed")

    @server.tool(description="Never finishes (a tool that hangs).")
    async def stall() -> str:
        await asyncio.sleep(3600)
        return "too late"

    if metadata:
        @server.tool(
            title="Describe an order",
            description="An order's status and item count, as structured data.",
            annotations=ToolAnnotations(
                title="Order summary",
                readOnlyHint=True,
                destructiveHint=False,
                idempotentHint=True,
                openWorldHint=False,
            ),
        )
        def describe_order(order_number: str) -> OrderSummary:
            return OrderSummary(order_number=order_number, status="shipped", items=3)

        @server.tool(description="Returns `size` bytes of text.", structured_output=False)
        def big_result(size: int) -> str:
            return "x" * size

        @server.tool(description="Returns `size` bytes of text, as structured data too.")
        def big_structured(size: int) -> Blob:
            return Blob(data="y" * size)

    if long_name:
        def long_tool() -> str:
            return "long name answered"

        server.add_tool(long_tool, name=LONG_NAME, description="A tool with a 200-character name.")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--header")
    parser.add_argument("--hang-file")
    parser.add_argument("--name", default="shop-mcp")
    parser.add_argument("--bulk", type=int, default=0)
    parser.add_argument("--metadata", action="store_true")
    parser.add_argument("--long-name", action="store_true")
    parser.add_argument("--trace-log")
    parser.add_argument("--catalogue", action="store_true")
    ns = parser.parse_args()

    mcp_app = build(ns.name, ns.bulk, ns.metadata, ns.long_name, ns.catalogue).streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    required: tuple[bytes, bytes] | None = None
    if ns.token:
        required = (b"authorization", f"Bearer {ns.token}".encode())
    elif ns.header:
        key, value = ns.header.split(":", 1)
        required = (key.strip().lower().encode(), value.strip().encode())

    async def app(scope, receive, send):
        if scope["type"] == "http":
            if ns.hang_file and os.path.exists(ns.hang_file):
                await asyncio.sleep(3600)
            headers = dict(scope["headers"])
            if required and headers.get(required[0]) != required[1]:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
            if ns.trace_log and scope.get("method") == "POST":
                receive = await record_trace(scope, receive, headers)
        await mcp_app(scope, receive, send)

    async def record_trace(scope, receive, headers):
        # The whole body, then handed on unchanged.
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            request = json.loads(body)
            method = request.get("method")
            meta = (request.get("params") or {}).get("_meta") or {}
            meta_trace = meta.get("traceparent")
        except (ValueError, AttributeError):
            method, meta_trace = None, None
        header = lambda name: headers.get(name).decode() if headers.get(name) else None
        line = {
            "method": method,
            "traceparent": header(b"traceparent"),
            "tracestate": header(b"tracestate"),
            "meta_traceparent": meta_trace,
        }
        with open(ns.trace_log, "a") as log:
            log.write(json.dumps(line) + "\n")
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    uvicorn.run(app, host="127.0.0.1", port=ns.port, log_level="warning")


if __name__ == "__main__":
    main()
