#!/usr/bin/env node
// Drive an MCP server with the official TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2).
//
// Usage: node ts_client.mjs URL [--tool NAME] [--args JSON]
//
// Connects over Streamable HTTP with the legacy initialize handshake (this SDK negotiates
// 2025-11-25), lists tools, calls --tool (default test_simple_text, only if listed; an explicit
// --tool is always called) and prints exactly one JSON line:
//   {"tools": [...], "text": str|null, "is_error": bool|null, "protocol": str|null}
// Exit 0 on success; on any error the message goes to stderr and the exit code is 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const DEFAULT_TOOL = 'test_simple_text';

function parseArgs(argv) {
  const out = { url: undefined, tool: undefined, args: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--tool') out.tool = argv[++i];
    else if (a === '--args') out.args = JSON.parse(argv[++i]);
    else if (out.url === undefined) out.url = a;
    else throw new Error(`unexpected argument: ${a}`);
  }
  if (!out.url) throw new Error('usage: ts_client.mjs URL [--tool NAME] [--args JSON]');
  if (typeof out.args !== 'object' || out.args === null || Array.isArray(out.args)) {
    throw new Error('--args must be a JSON object');
  }
  return out;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const client = new Client({ name: 'mirobody-ts-test-client', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url));
  const timeout = { timeout: 30_000 };
  await client.connect(transport, timeout);
  try {
    const tools = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, timeout);
      tools.push(...res.tools.map((t) => t.name));
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    const tool = opts.tool ?? DEFAULT_TOOL;
    let text = null;
    let isError = null;
    if (opts.tool !== undefined || tools.includes(tool)) {
      const result = await client.callTool({ name: tool, arguments: opts.args }, undefined, timeout);
      const first = (result.content ?? []).find((c) => c.type === 'text');
      text = first ? first.text : null;
      isError = Boolean(result.isError);
    }
    const protocol = transport.protocolVersion ?? null;
    process.stdout.write(JSON.stringify({ tools, text, is_error: isError, protocol }) + '\n');
  } finally {
    await client.close().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`ts_client error: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
