#!/usr/bin/env node
// A person's browser, for a client that opens one to sign in (mcp-remote, the Inspector CLI):
// the client runs this as its `BROWSER` with the authorization URL; headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core) opens it, fills #email and
// #password with SIGN_IN_EMAIL and SIGN_IN_PASSWORD, clicks #allow, and follows the
// redirect to the client's own loopback callback, as a person clicking Allow does.
//
// Usage: SIGN_IN_EMAIL=… SIGN_IN_PASSWORD=… node sign_in_browser.mjs AUTHORIZATION_URL
//
// Appends JSON lines to SIGN_IN_LOG (when set): the path opened and the page's title (before
// Allow is pressed), then where the browser landed (the code elided), or the error. Exit 0
// once the callback answered. Every page request must stay on loopback; one that does not
// fails the run.
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 30_000;
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const isLoopback = (host) => host === '127.0.0.1' || host === 'localhost' || host === '[::1]';

function record(entry) {
  if (process.env.SIGN_IN_LOG) appendFileSync(process.env.SIGN_IN_LOG, `${JSON.stringify(entry)}\n`);
}

async function signIn(url) {
  if (!isLoopback(new URL(url).hostname)) throw new Error(`not a loopback URL: ${url}`);
  const profile = mkdtempSync(join(tmpdir(), 'mirobody-sign-in-'));
  const offLoopback = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: STEP_TIMEOUT_MS,
  });
  try {
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    context.on('request', (request) => {
      const { protocol, hostname } = new URL(request.url());
      if ((protocol === 'http:' || protocol === 'https:') && !isLoopback(hostname)) offLoopback.push(request.url());
    });
    const page = await context.newPage();
    const opened = await page.goto(url, { waitUntil: 'load' });
    if (!opened || opened.status() !== 200) throw new Error(`the sign-in page answered ${opened?.status()}`);
    const title = await page.title();
    await page.fill('#email', process.env.SIGN_IN_EMAIL ?? '');
    await page.fill('#password', process.env.SIGN_IN_PASSWORD ?? '');
    if (offLoopback.length) throw new Error(`requests left loopback: ${offLoopback.join(' ')}`);
    // Recorded before Allow is pressed: the client may end (and end this process) as soon
    // as its callback has the code, before the callback's page has loaded here.
    record({ opened: new URL(url).pathname, title });
    await Promise.all([page.waitForEvent('load'), page.click('#allow')]);
    if (offLoopback.length) throw new Error(`requests left loopback: ${offLoopback.join(' ')}`);
    record({ landed: page.url().replace(/([?&]code=)[^&]+/, '$1…') });
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

const url = process.argv[2];
try {
  if (!url) throw new Error('usage: sign_in_browser.mjs AUTHORIZATION_URL');
  await signIn(url);
} catch (e) {
  record({ opened: url, error: String(e?.message || e) });
  console.error(String(e?.message || e));
  process.exit(1);
}
