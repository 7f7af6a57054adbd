#!/usr/bin/env python3
"""A user's external MCP server for the end-to-end tests (the second seed's example).

Usage:
    remote_server.py PORT [--token T] [--header NAME:VALUE] [--hang-file PATH] [--name N]
                          [--bulk K]

The Python SDK's MCPServer (mcp==2.3.0, both eras: 2026-07-28 and the 2025 handshake)
behind uvicorn on 127.0.0.1. With --token, requests need `Authorization: Bearer T`;
with --header, they need that header; otherwise 401. While --hang-file exists, every
request hangs (a server that stopped answering). Tools: lookup_order, create_ticket,
always_fails (raises, so the result is isError), stall (never finishes); with --bulk K,
also bulk_000 … (K tools, each with a 15 kB description: a listing that must be bounded).
"""

from __future__ import annotations

import argparse
import asyncio
import os

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings


def build(name: str, bulk: int = 0) -> MCPServer:
    server = MCPServer(name=name, version="0.1")

    for i in range(bulk):
        def bulk_tool(i: int = i) -> str:
            return f"bulk {i}"

        server.add_tool(bulk_tool, name=f"bulk_{i:03}", description="d" * 15_000)

    @server.tool(description="Look up an order's status by its order number.")
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

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--header")
    parser.add_argument("--hang-file")
    parser.add_argument("--name", default="shop-mcp")
    parser.add_argument("--bulk", type=int, default=0)
    ns = parser.parse_args()

    mcp_app = build(ns.name, ns.bulk).streamable_http_app(
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
        await mcp_app(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=ns.port, log_level="warning")


if __name__ == "__main__":
    main()
