#!/usr/bin/env node
// A person signing the gateway in to one of their OAuth-protected MCP servers, in headless
// Chromium (Debian's /usr/bin/chromium, driven by playwright-core): signs in to the
// gateway's console, presses "Sign in" on the server's row of the Servers page, follows
// "Continue to …" to the other server's consent page, signs in there and allows, and lands
// back on the console. Every page request must stay on loopback.
//
// Usage: node gateway_sign_in.mjs GATEWAY_ORIGIN SERVER_NAME
//   with GATEWAY_EMAIL, GATEWAY_PASSWORD (the console's person) and REMOTE_EMAIL,
//   REMOTE_PASSWORD (the person on the other server) in the environment.
// Prints one JSON line: {"continue_host", "consent_title", "landed", "notice"}.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 30_000;
const isLoopback = (host) => host === '127.0.0.1' || host === 'localhost' || host === '[::1]';

const [origin, server] = process.argv.slice(2);
if (!origin || !server) {
  console.error('usage: gateway_sign_in.mjs GATEWAY_ORIGIN SERVER_NAME');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'mirobody-gateway-sign-in-'));
const offLoopback = [];
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  timeout: STEP_TIMEOUT_MS,
});
try {
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  context.on('request', (request) => {
    const { protocol, hostname } = new URL(request.url());
    if ((protocol === 'http:' || protocol === 'https:') && !isLoopback(hostname)) offLoopback.push(request.url());
  });
  const page = await context.newPage();
  await page.goto(`${origin}/console/signin`, { waitUntil: 'load' });
  await page.fill('#email', process.env.GATEWAY_EMAIL ?? '');
  await page.fill('#password', process.env.GATEWAY_PASSWORD ?? '');
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/console/signin')),
    page.click('#signin')]);
  await page.goto(`${origin}/console/servers`, { waitUntil: 'load' });
  await Promise.all([page.waitForEvent('load'),
    page.click(`tr[data-server="${server}"] button.server-sign-in`)]);
  const link = page.locator('#sign-in-continue');
  const continueHost = new URL(await link.getAttribute('href')).host;
  await Promise.all([page.waitForEvent('load'), link.click()]);
  const consentTitle = await page.title();
  await page.fill('#email', process.env.REMOTE_EMAIL ?? '');
  await page.fill('#password', process.env.REMOTE_PASSWORD ?? '');
  await Promise.all([page.waitForURL((u) => u.origin === origin && u.pathname === '/console/servers'),
    page.click('#allow')]);
  const notice = (await page.locator('p.notice').first().textContent({ timeout: 5_000 })
    .catch(() => '')) || '';
  if (offLoopback.length) throw new Error(`requests left loopback: ${offLoopback.join(' ')}`);
  const landed = new URL(page.url());
  console.log(JSON.stringify({
    continue_host: continueHost,
    consent_title: consentTitle,
    landed: `${landed.pathname}${landed.search}`,
    notice: notice.trim(),
  }));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
