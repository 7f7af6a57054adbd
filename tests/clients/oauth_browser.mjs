#!/usr/bin/env node
// The OAuth 2.1 flows end to end, through the server's real HTML pages in headless
// Chromium (Debian's /usr/bin/chromium, driven by playwright-core; nothing is downloaded).
//
// Usage: node oauth_browser.mjs BASE_URL [--screenshots DIR]
//
// 1. Authorization code with PKCE S256: sign up (POST /auth/signup), register a public client
//    (POST /oauth/register) whose redirect URI is this script's own loopback callback server,
//    open /oauth/authorize in Chromium, fill #email and #password, click #allow, receive the code
//    at the callback, exchange it at /oauth/token, call tools/call get_genetic_data on /mcp with
//    the access token (a 2026-07-28 request), refresh (rotation), see the old refresh token
//    refused with invalid_grant (and, reuse detected, the new one too), see introspection
//    refuse the unauthenticated public client (401), and read the new token's audience.
// 2. The login prompt: an anonymous tools/call answers with authorization_url, user_code and
//    auto_polling.poll_url; polling without the poll secret gets nothing; Chromium opens
//    /mcplogin (which says who asked), types the user code and signs in; poll_url turns
//    completed with a token, once (a second poll: 410); the same tools/call with that token
//    succeeds.
//
// Prints exactly one JSON line with the outcomes. Exit 0 on success; on any failure the message
// goes to stderr and the exit code is 1. Every connection stays on loopback: BASE_URL must be a
// loopback URL, Chromium runs with its background networking off, and any page request to a
// non-loopback host fails the run.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const MODERN = '2026-07-28';
const PASSWORD = 'correct horse battery staple';
const STEP_TIMEOUT_MS = 30_000;
// The probe's flags: no background networking (Chromium would try to reach Google), no QUIC.
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

function parseArgs(argv) {
  const out = { base: undefined, screenshots: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--screenshots') out.screenshots = argv[++i];
    else if (out.base === undefined) out.base = a.replace(/\/+$/, '');
    else throw new Error(`unexpected argument: ${a}`);
  }
  if (!out.base) throw new Error('usage: oauth_browser.mjs BASE_URL [--screenshots DIR]');
  if (!isLoopback(new URL(out.base).hostname)) {
    throw new Error(`BASE_URL must be a loopback URL, not ${out.base}`);
  }
  return out;
}

function isLoopback(hostname) {
  return ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const b64url = (buf) => buf.toString('base64url');

function pkce() {
  const verifier = b64url(randomBytes(48)); // 64 unreserved characters
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  return { verifier, challenge };
}

async function http(method, url, { json, form, headers = {} } = {}) {
  const init = { method, headers: { ...headers }, redirect: 'manual', signal: AbortSignal.timeout(STEP_TIMEOUT_MS) };
  if (json !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(json);
  } else if (form !== undefined) {
    init.headers['content-type'] = 'application/x-www-form-urlencoded';
    init.body = new URLSearchParams(form).toString();
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** A loopback HTTP server that receives the authorization redirect. */
async function callbackServer() {
  const waiting = [];
  const arrived = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Callback</title><p id="done">Authorization received.</p>');
    const params = Object.fromEntries(url.searchParams);
    const next = waiting.shift();
    if (next) next(params);
    else arrived.push(params);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    next() {
      if (arrived.length) return Promise.resolve(arrived.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no redirect reached the callback server')), STEP_TIMEOUT_MS);
        waiting.push((params) => {
          clearTimeout(timer);
          resolve(params);
        });
      });
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** A 2026-07-28 tools/call of get_genetic_data: _meta in params, the mirrored headers. */
async function callGeneticData(base, token) {
  const headers = {
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': 'get_genetic_data',
  };
  if (token) headers.authorization = `Bearer ${token}`;
  const reply = await http('POST', `${base}/mcp`, {
    headers,
    json: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'get_genetic_data',
        arguments: { rsid: 'rs429358' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'oauth-browser <test>', version: '1.0.0' },
        },
      },
    },
  });
  check(reply.status === 200, `tools/call answered ${reply.status}: ${reply.text}`);
  const result = reply.body?.result;
  check(result && typeof result === 'object', `tools/call is not a result: ${reply.text}`);
  const text = (result.content || []).find((c) => c.type === 'text')?.text ?? '';
  return { result, text, isError: result.isError === true };
}

/** Opens `url`, fills the sign-in form and clicks Allow. A Content Security Policy violation
 *  (the browser refusing the form post or its redirect) fails at once, with the browser's words. */
async function signInThroughPage(context, url, email, { screenshot, expectTitle, userCode }) {
  const page = await context.newPage();
  const consoleErrors = [];
  let refused;
  const blocked = new Promise((_, reject) => {
    refused = reject;
  });
  blocked.catch(() => {});
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    consoleErrors.push(message.text());
    if (message.text().includes('Content Security Policy')) {
      refused(new Error(`Chromium blocked the sign-in form: ${message.text()}`));
    }
  });
  try {
    const response = await page.goto(url, { waitUntil: 'load' });
    check(response && response.status() === 200, `${new URL(url).pathname} answered ${response?.status()}`);
    const title = await page.title();
    check(title === expectTitle, `page title ${JSON.stringify(title)}, expected ${JSON.stringify(expectTitle)}`);
    const heading = (await page.locator('h1').textContent())?.trim();
    const intro = (await page.locator('p').first().textContent())?.trim();
    for (const id of ['email', 'password', 'allow', 'deny']) {
      check(await page.locator(`#${id}`).isVisible(), `#${id} is not visible on the sign-in page`);
    }
    let asked;
    if (userCode !== undefined) {
      // /mcplogin says who asked and asks for the code the initiating client showed.
      check(await page.locator('#user_code').isVisible(), '#user_code is not visible on the /mcplogin page');
      asked = (await page.locator('#asked').textContent())?.trim();
    }
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    if (userCode !== undefined) await page.fill('#user_code', userCode);
    await page.fill('#email', email);
    await page.fill('#password', PASSWORD);
    await Promise.race([Promise.all([page.waitForEvent('load'), page.click('#allow')]), blocked]);
    return { page, heading, intro, asked, landed: page.url() };
  } catch (e) {
    await page.close();
    if (consoleErrors.length && !String(e.message).includes('Content Security Policy')) {
      e.message += `\nbrowser console errors: ${consoleErrors.join(' | ')}`;
    }
    throw e;
  }
}

async function codeFlow(base, context, callback, email, screenshots) {
  const reg = await http('POST', `${base}/oauth/register`, {
    json: {
      client_name: 'Browser E2E',
      redirect_uris: [callback.redirectUri],
      token_endpoint_auth_method: 'none',
    },
  });
  check(reg.status === 201, `/oauth/register answered ${reg.status}: ${reg.text}`);
  const clientId = reg.body.client_id;
  check(typeof clientId === 'string' && !('client_secret' in reg.body), `registration: ${reg.text}`);

  const { verifier, challenge } = pkce();
  const state = b64url(randomBytes(16));
  const resource = `${base}/mcp`;
  const authorize = new URL(`${base}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: callback.redirectUri,
    scope: 'mcp:tools',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource,
  }).toString();

  const redirected = callback.next();
  redirected.catch(() => {}); // awaited below; a timeout must not be an unhandled rejection
  const { page, heading, intro, landed } = await signInThroughPage(context, authorize.toString(), email, {
    screenshot: screenshots && join(screenshots, 'mirobody-oauth-authorize.png'),
    expectTitle: 'Sign in to Mirobody',
  });
  const params = await redirected;
  const callbackText = (await page.locator('#done').textContent().catch(() => null))?.trim() ?? null;
  await page.close();
  check(!params.error, `the authorization redirect carries an error: ${JSON.stringify(params)}`);
  check(typeof params.code === 'string' && params.code.length > 0, `no code in ${JSON.stringify(params)}`);
  check(params.state === state, `state came back as ${params.state}`);
  check(params.iss === base, `iss came back as ${params.iss}, expected ${base}`);

  const exchanged = await http('POST', `${base}/oauth/token`, {
    form: {
      grant_type: 'authorization_code',
      code: params.code,
      redirect_uri: callback.redirectUri,
      client_id: clientId,
      code_verifier: verifier,
      resource,
    },
  });
  check(exchanged.status === 200, `code exchange answered ${exchanged.status}: ${exchanged.text}`);
  const first = exchanged.body;
  check(first.token_type === 'Bearer' && first.access_token && first.refresh_token, `token response: ${exchanged.text}`);

  const call = await callGeneticData(base, first.access_token);
  check(!call.isError, `tools/call with the access token is an error: ${call.text}`);
  check(call.text.includes('No genotype data'), `unexpected tool text: ${call.text}`);

  const refreshed = await http('POST', `${base}/oauth/token`, {
    form: { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId },
  });
  check(refreshed.status === 200, `refresh answered ${refreshed.status}: ${refreshed.text}`);
  const second = refreshed.body;
  check(second.access_token && second.refresh_token, `refresh response: ${refreshed.text}`);
  check(second.refresh_token !== first.refresh_token, 'the refresh token was not rotated');

  const afterRefresh = await callGeneticData(base, second.access_token);
  check(!afterRefresh.isError && afterRefresh.text.includes('No genotype data'), `tools/call after refresh: ${afterRefresh.text}`);

  const reused = await http('POST', `${base}/oauth/token`, {
    form: { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId },
  });
  check(reused.status === 400 && reused.body.error === 'invalid_grant', `old refresh token: ${reused.status} ${reused.text}`);
  // Reuse detection revokes the whole family, so the rotated token is refused as well.
  const family = await http('POST', `${base}/oauth/token`, {
    form: { grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: clientId },
  });
  check(family.status === 400 && family.body.error === 'invalid_grant', `new refresh token after reuse: ${family.status} ${family.text}`);

  // Introspection needs a confidential client's authentication: this public
  // client is refused, and the token's audience is read from its own payload instead.
  const introspected = await http('POST', `${base}/oauth/introspect`, { form: { token: second.access_token } });
  check(introspected.status === 401 && introspected.body.error === 'invalid_client', `introspection: ${introspected.status} ${introspected.text}`);
  const claims = JSON.parse(Buffer.from(second.access_token.split('.')[1], 'base64url').toString('utf8'));
  check(claims.client_id === clientId, `token client_id: ${JSON.stringify(claims)}`);
  check(claims.aud === resource || (Array.isArray(claims.aud) && claims.aud.includes(resource)),
    `token aud: ${JSON.stringify(claims)}`);

  return {
    signin_page: { heading, intro, landed_on_callback: landed.startsWith(callback.redirectUri), callback_page: callbackText },
    redirect: { state_matches: true, iss: params.iss },
    token: { token_type: first.token_type, expires_in: first.expires_in, scope: first.scope },
    tool_call: { is_error: call.isError, text_mentions_no_genotype_data: true },
    refresh: { rotated: true, old_refresh_error: reused.body.error, family_revoked_error: family.body.error },
    introspection: { unauthenticated_status: introspected.status, client_id_matches: true, aud: claims.aud },
  };
}

async function loginPromptFlow(base, context, email, screenshots) {
  const anonymous = await callGeneticData(base, null);
  check(!anonymous.isError, `the anonymous call is an error: ${anonymous.text}`);
  let prompt;
  try {
    prompt = JSON.parse(anonymous.text);
  } catch {
    throw new Error(`the anonymous call did not return the login prompt JSON: ${anonymous.text}`);
  }
  const url = prompt.authorization_url;
  const state = prompt.auto_polling?.state;
  const pollUrl = prompt.auto_polling?.poll_url;
  const userCode = prompt.user_code;
  check(typeof url === 'string' && url.startsWith(`${base}/mcplogin?`), `authorization_url: ${url}`);
  check(typeof state === 'string' && state.length > 0, `auto_polling: ${JSON.stringify(prompt.auto_polling)}`);
  check(typeof pollUrl === 'string' && pollUrl.startsWith(`${base}/oauth2/check_state/`), `auto_polling.poll_url: ${pollUrl}`);
  check(typeof userCode === 'string' && /^[B-Z]{4}-[B-Z]{4}$/.test(userCode), `user_code: ${userCode}`);

  // Without the poll secret (the state alone, as the link carries it) the poll gets nothing.
  const bare = await http('GET', `${base}/oauth2/check_state/${encodeURIComponent(state)}`);
  check(bare.status === 400 && !bare.body.token, `check_state without the poll secret: ${bare.status} ${bare.text}`);
  const pending = await http('GET', pollUrl);
  check(pending.status === 200 && pending.body.status === 'pending', `check_state before sign-in: ${pending.status} ${pending.text}`);

  const { page, heading, asked } = await signInThroughPage(context, url, email, {
    screenshot: screenshots && join(screenshots, 'mirobody-mcplogin.png'),
    expectTitle: 'Sign in to Mirobody',
    userCode,
  });
  const doneTitle = await page.title();
  const doneMessage = (await page.locator('#message').textContent())?.trim();
  if (screenshots) await page.screenshot({ path: join(screenshots, 'mirobody-mcplogin-done.png'), fullPage: true });
  await page.close();
  check(doneTitle === 'Signed in', `after Allow the page says ${JSON.stringify(doneTitle)}: ${doneMessage}`);

  const done = await http('GET', pollUrl);
  check(done.status === 200 && done.body.status === 'completed' && done.body.token, `check_state after sign-in: ${done.status} ${done.text}`);
  // The token is handed out once.
  const again = await http('GET', pollUrl);
  check(again.status === 410 && !again.body.token, `check_state a second time: ${again.status} ${again.text}`);

  const call = await callGeneticData(base, done.body.token);
  check(!call.isError && call.text.includes('No genotype data'), `tools/call with the login token: ${call.text}`);
  return {
    prompt: { has_authorization_url: true, auto_open_browser: prompt.auto_open_browser === true },
    check_state_before: pending.body.status,
    page: { heading, asked, after_allow: doneTitle },
    check_state_without_poll_secret: bare.status,
    check_state_after: done.body.status,
    check_state_again: again.status,
    tool_call: { is_error: call.isError, text_mentions_no_genotype_data: true },
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const base = opts.base;
  const email = `browser-${b64url(randomBytes(6)).toLowerCase()}@example.test`;
  const signup = await http('POST', `${base}/auth/signup`, { json: { email, password: PASSWORD } });
  check(signup.status === 201, `/auth/signup answered ${signup.status}: ${signup.text}`);

  const callback = await callbackServer();
  const profile = mkdtempSync(join(tmpdir(), 'mirobody-chromium-'));
  const offLoopback = [];
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: STEP_TIMEOUT_MS,
    });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    context.on('request', (request) => {
      const { protocol, hostname } = new URL(request.url());
      if ((protocol === 'http:' || protocol === 'https:') && !isLoopback(hostname)) offLoopback.push(request.url());
    });
    // The two flows are independent: run both, so one failure does not hide the other.
    const outcome = async (flow) => {
      try {
        return { ok: true, ...(await flow()) };
      } catch (e) {
        return { ok: false, error: String(e?.message || e) };
      }
    };
    const codeFlowReport = await outcome(() => codeFlow(base, context, callback, email, opts.screenshots));
    const loginReport = await outcome(() => loginPromptFlow(base, context, email, opts.screenshots));
    const report = {
      ok: codeFlowReport.ok && loginReport.ok && offLoopback.length === 0,
      chromium: context.browser()?.version() ?? null,
      code_flow: codeFlowReport,
      login_prompt: loginReport,
      off_loopback_requests: offLoopback,
    };
    if (opts.screenshots) report.screenshots = opts.screenshots;
    console.log(JSON.stringify(report));
    if (!report.ok) {
      for (const [name, r] of [['code_flow', codeFlowReport], ['login_prompt', loginReport]]) {
        if (!r.ok) console.error(`oauth_browser: ${name} failed: ${r.error}`);
      }
      if (offLoopback.length) console.error(`oauth_browser: pages requested non-loopback URLs: ${offLoopback.join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    if (context) await context.close().catch(() => {});
    await callback.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    console.error(`oauth_browser error: ${e?.stack || e}`);
    process.exit(1);
  },
);
