#!/usr/bin/env node
// The web console end to end in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core; nothing is downloaded), through the DOM contract of the pages.
//
// Usage: node console_browser.mjs BASE_URL --screenshots DIR --python PYTHON
//            --remote MCP_URL --remote-token TOKEN --mail-dir DIR
//
// Named steps, in order: signup, signout_signin, password, confirm_address (the
// link from the sign-up mail, read from the local server's mail directory, confirms the
// address once), accept_invitation (another account shares with this address: the access
// page shows the invitation, accepting makes the share; a share offered here waits as an
// invitation), forgot_reset (the reset link mailed from "forgot password" sets a new
// password and ends the session), upload_genome, upload_readings,
// chart, truthful_numbers (an Apple Health export's step totals, time in range,
// glucose profile and sleep stages read off the pages and through /mcp), genome_lookup,
// personal_url (minted, copied, used from the Python SDK client), mcp_server (a local Python SDK server registered, its tools shown), oauth_revoke (a client
// authorised through the consent page in this browser, revoked on the access page, its
// refresh token refused), screenshots (every page at 1280x800 and 390x844), export,
// delete_account (then every credential of the account refused).
//
// A step whose page is still a stub (it shows "Coming soon.") is SKIPPED, not failed, so the
// flow runs against whatever pages exist. Every page is checked on the way: no Content
// Security Policy violation, no request off loopback, under 50 KB.
//
// Prints one JSON line: {ok, chromium, steps: [{name, status, ...}], screenshots,
// off_loopback_requests, csp_violations, page_sizes}. Exit 1 on any failed step.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

// axe-core (from npm), evaluated in each page over CDP (page script could not load it:
// the console's CSP allows only its own script).
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const CHROMIUM = '/usr/bin/chromium';
const MODERN = '2026-07-28';
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a different horse, battery and staple';
const RESET_PASSWORD = 'a third horse, set through a mailed link';
const STEP_TIMEOUT_MS = 30_000;
const PAGE_LIMIT = 50 * 1024;
const STUB = 'Coming soon.';
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
const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];
// The readings file: a year of monthly HbA1c (a line chart with a known reference range)
// and two fasting glucose values.
const READINGS_CSV = [
  'indicator,value,unit,time,source',
  ...Array.from({ length: 12 }, (_, i) => `HbA1c,${(5.2 + (i % 4) * 0.3).toFixed(1)},%,2026-${String(i + 1).padStart(2, '0')}-15,City Lab`),
  '"Glucose, fasting",101,mg/dL,2026-01-10,City Lab',
  '"Glucose, fasting",96,mg/dL,2026-03-12,City Lab',
].join('\n') + '\n';
const READING_ROWS = 14;
// Truthful numbers, from an Apple Health export (export.xml) a person could have written,
// every answer worked out by hand here; the Rust test asserts the same values.
//
// Steps (local days, +01:00): on 2026-03-26 the iPhone counted 500 in each hour 08:00 to
// 19:00 and the Watch 700 in each hour 10:00 to 13:00; each hour counts the source that
// counted most: 8 phone hours × 500 + 4 watch hours × 700 = 4,000 + 2,800 = 6,800 (never
// 12 × 500 + 4 × 700 = 8,800). On 2026-03-27 the iPhone counted 300 in each hour 08:00 to
// 17:00 and the Watch 200 at 09:00 (less than the phone's 300): 10 × 300 = 3,000.
//
// CGM glucose, a reading every 5 minutes on 2026-03-26 (day 0) and 2026-03-27 (day 1):
// 288 a day, 576 in all. The m-th reading of an hour (m = 0..11) is base + 2m + 30 × day,
// base 40 at 03:00, 200 at 12:00 and 13:00, else 100.
//   Hour 08: day 0 reads 100, 102, ..., 122; day 1 130, 132, ..., 152 (24 values, sorted
//   the same way). Nearest rank of n = 24: p5 rank ⌈1.2⌉ = 2 → 102; p25 rank 6 → 110;
//   median rank 12 → 122; p75 rank 18 → day 1's 6th, 140; p95 rank ⌈22.8⌉ = 23 → 150.
//   Hour 03: day 0 40..62 (12 readings below 70), day 1 70..92 (in range: 70 is in).
//   Hours 12 and 13: 200..222 and 230..252, all 48 above 180.
//   In range: 576 − 12 − 48 = 516 sensor readings. The readings file of `upload_readings`
//   holds two fasting glucose values (101 and 96 mg/dL, in range), the same measure: the
//   series holds 578 readings, 518 in range: 518 / 578 = 89.62 % → 89.6 %.
//   The profile's window is the last 14 days with data, 2026-03-14 to 2026-03-27: the
//   fasting value of 2026-03-12 (timed 00:00) falls outside it, so hour 08 is as above.
//
// Sleep (the Watch), a night dated by the morning it ends:
//   Night to 2026-03-27: in bed 23:00-07:00; core 23:10-01:10 (120 min), deep 01:10-02:00
//   (50), core 02:00-04:50 (170), REM 04:50-05:40 (50), awake 05:40-05:50 (10), core
//   05:50-06:50 (60): core 350 min = 5 h 50 min, deep 0 h 50 min, REM 0 h 50 min, awake
//   0 h 10 min; asleep 450 min = 7 h 30 min.
//   Night to 2026-03-28: core 23:30-03:30 (240), deep 03:30-04:30 (60), REM 04:30-05:45
//   (75), awake 05:45-06:00 (15), core 06:00-06:30 (30): core 270 = 4 h 30 min, deep
//   1 h 00 min, REM 1 h 15 min, awake 0 h 15 min; asleep 405 min = 6 h 45 min.
//
// Readings written: 576 glucose + 27 steps (12 + 4 + 10 + 1) + sleep: the first night 6
// (asleep, core, deep, REM, awake, in bed), the second 5 (no in bed) = 614.
const APPLE_ROWS = 614;
function appleRecord(type, source, unit, value, start, end) {
  const unitAttr = unit ? ` unit="${unit}"` : '';
  return ` <Record type="${type}" sourceName="${source}" sourceVersion="17.4"${unitAttr} creationDate="${end}" startDate="${start}" endDate="${end}" value="${value}"/>`;
}
function appleExport() {
  const at = (day, hh, mm) => `2026-03-${day} ${String(hh).padStart(2, '0')}:${String(mm).padStart(2, '0')}:00 +0100`;
  const steps = (source, day, hours, value) => hours.map((h) => appleRecord('HKQuantityTypeIdentifierStepCount', source, 'count', value, at(day, h, 0), at(day, h, 59)));
  const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const records = [
    ...steps('Jo’s iPhone', 26, range(8, 19), 500),
    ...steps('Jo’s Watch', 26, range(10, 13), 700),
    ...steps('Jo’s iPhone', 27, range(8, 17), 300),
    ...steps('Jo’s Watch', 27, [9], 200),
  ];
  for (const [d, day] of [[0, 26], [1, 27]]) {
    for (let h = 0; h < 24; h++) {
      const base = h === 3 ? 40 : (h === 12 || h === 13 ? 200 : 100);
      for (let m = 0; m < 12; m++) {
        const t = at(day, h, 5 * m);
        records.push(appleRecord('HKQuantityTypeIdentifierBloodGlucose', 'Dexcom G7', 'mg/dL', base + 2 * m + 30 * d, t, t));
      }
    }
  }
  const sleep = (stage, start, end) => appleRecord('HKCategoryTypeIdentifierSleepAnalysis', 'Jo’s Watch', null, `HKCategoryValueSleepAnalysis${stage}`, start, end);
  records.push(
    sleep('InBed', at(26, 23, 0), at(27, 7, 0)),
    sleep('AsleepCore', at(26, 23, 10), at(27, 1, 10)),
    sleep('AsleepDeep', at(27, 1, 10), at(27, 2, 0)),
    sleep('AsleepCore', at(27, 2, 0), at(27, 4, 50)),
    sleep('AsleepREM', at(27, 4, 50), at(27, 5, 40)),
    sleep('Awake', at(27, 5, 40), at(27, 5, 50)),
    sleep('AsleepCore', at(27, 5, 50), at(27, 6, 50)),
    sleep('AsleepCore', at(27, 23, 30), at(28, 3, 30)),
    sleep('AsleepDeep', at(28, 3, 30), at(28, 4, 30)),
    sleep('AsleepREM', at(28, 4, 30), at(28, 5, 45)),
    sleep('Awake', at(28, 5, 45), at(28, 6, 0)),
    sleep('AsleepCore', at(28, 6, 0), at(28, 6, 30)),
  );
  return ['<?xml version="1.0" encoding="UTF-8"?>', '<HealthData locale="en_US">',
    ' <ExportDate value="2026-03-28 09:00:00 +0100"/>', ...records, '</HealthData>', ''].join('\n');
}
const GENOME = [
  '# 23andMe-style raw data',
  '# rsid\tchromosome\tposition\tgenotype',
  'rs429358\t19\t44908684\tTC',
  'rs7412\t19\t44908822\tCC',
  'rs4680\t22\t19951271\tAG',
  'rs1801133\t1\t11796321\tAG',
].join('\n') + '\n';

function parseArgs(argv) {
  const out = { base: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--screenshots') out.screenshots = argv[++i];
    else if (a === '--python') out.python = argv[++i];
    else if (a === '--remote') out.remote = argv[++i];
    else if (a === '--remote-token') out.remoteToken = argv[++i];
    else if (a === '--mail-dir') out.mailDir = argv[++i];
    else if (out.base === undefined) out.base = a.replace(/\/+$/, '');
    else throw new Error(`unexpected argument: ${a}`);
  }
  if (!out.base || !out.screenshots || !out.python || !out.remote || !out.remoteToken || !out.mailDir) {
    throw new Error('usage: console_browser.mjs BASE_URL --screenshots DIR --python PYTHON --remote URL --remote-token TOKEN --mail-dir DIR');
  }
  for (const url of [out.base, out.remote]) {
    if (!isLoopback(new URL(url).hostname)) throw new Error(`${url} is not a loopback URL`);
  }
  return out;
}

function isLoopback(hostname) {
  return ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

class Skipped extends Error {}

const b64url = (buf) => buf.toString('base64url');

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

/** A modern tools/list or tools/call on `url` with an optional bearer token. */
async function mcp(url, token, method, params = {}) {
  const headers = {
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
  };
  if (params.name) headers['mcp-name'] = params.name;
  if (token) headers.authorization = `Bearer ${token}`;
  return http('POST', url, {
    headers,
    json: {
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'console-browser', version: '1.0.0' },
        },
      },
    },
  });
}

/** A loopback HTTP server that receives the OAuth authorization redirect. */
async function callbackServer() {
  const waiting = [];
  const arrived = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
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

/** The console flow's shared state and its page checks. */
class Flow {
  constructor(opts, context) {
    this.opts = opts;
    this.base = opts.base;
    this.context = context;
    this.email = `console-${b64url(randomBytes(6)).toLowerCase()}@example.test`;
    this.password = PASSWORD;
    this.cspViolations = [];
    this.pageSizes = {};
    this.screenshots = [];
    this.axeViolations = [];
    this.axeChecked = [];
    this.credentials = {};
    this.files = mkdtempSync(join(tmpdir(), 'mirobody-console-files-'));
  }

  async open() {
    this.page = await this.context.newPage();
    this.page.on('console', (message) => {
      if (message.type() === 'error' && message.text().includes('Content Security Policy')) {
        this.cspViolations.push(`${this.page.url()}: ${message.text()}`);
      }
    });
    // Confirmations (`data-confirm`) are accepted, as a person who means it would.
    this.page.on('dialog', (dialog) => dialog.accept().catch(() => {}));
    this.page.on('response', async (response) => {
      const url = new URL(response.url());
      const type = response.headers()['content-type'] || '';
      if (url.origin !== this.base || !type.startsWith('text/html')) return;
      try {
        const body = await response.body();
        this.pageSizes[url.pathname] = Math.max(this.pageSizes[url.pathname] || 0, body.length);
      } catch {
        // a redirect has no body to read
      }
    });
  }

  /** Goes to a console path and fails on an error status; a stub page skips the step. */
  async visit(path, { stubSkips = true, below = 400 } = {}) {
    const response = await this.page.goto(`${this.base}${path}`, { waitUntil: 'load' });
    check(response && response.status() < below, `${path} answered ${response?.status()}`);
    if (stubSkips && (await this.isStub())) throw new Skipped(`${path} is still a stub`);
    return response;
  }

  async isStub() {
    const text = await this.page.locator('main').textContent().catch(() => '');
    return (text || '').includes(STUB);
  }

  /** Clicks and waits for the page the click loads. */
  async submit(selector) {
    await Promise.all([this.page.waitForEvent('load'), this.page.click(selector)]);
  }

  path() {
    return new URL(this.page.url()).pathname;
  }

  /** The text a person sees (innerText: cells and blocks stay apart). */
  async text(selector) {
    return ((await this.page.locator(selector).first().innerText()) || '').trim();
  }

  async shoot(name) {
    for (const viewport of VIEWPORTS) {
      await this.page.setViewportSize(viewport);
      const file = join(this.opts.screenshots, `${name}-${viewport.width}.png`);
      await this.page.screenshot({ path: file, fullPage: true });
      this.screenshots.push(file);
      await this.accessibility(`${name}-${viewport.width}`);
      if (viewport.width < 600) {
        const cut = await this.overflowing();
        check(cut.length === 0, `${name} at ${viewport.width} px: cut off at the right edge: ${cut.join('; ')}`);
      }
    }
    await this.page.setViewportSize(VIEWPORTS[0]);
  }

  /** axe-core's WCAG 2 A/AA rules on the page as shown; every violation is recorded. */
  async accessibility(label) {
    const violations = await this.page.evaluate(`${AXE_SOURCE}
      ;axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
        .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`);
    this.axeChecked.push(label);
    for (const v of violations) this.axeViolations.push({ page: label, ...v });
  }

  /**
   * What sticks out past the viewport's right edge: the page scrolls sideways, or a
   * visible element ends beyond the edge (inside a scrolling box too, so a cut-off
   * table column counts; a `pre` of code may scroll).
   */
  async overflowing() {
    return this.page.evaluate(() => {
      const edge = document.documentElement.clientWidth;
      const out = [];
      if (document.documentElement.scrollWidth > edge + 1) {
        out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
      }
      for (const element of document.body.querySelectorAll('*')) {
        if (element.closest('pre')) continue;
        const box = element.getBoundingClientRect();
        if (box.width === 0 || box.height === 0 || box.right <= edge + 1) continue;
        const style = getComputedStyle(element);
        if (style.visibility === 'hidden' || box.left < 0) continue;
        const id = element.id ? `#${element.id}` : '';
        const cls = element.classList.length ? `.${[...element.classList].join('.')}` : '';
        out.push(`${element.tagName.toLowerCase()}${id}${cls} ends at ${Math.round(box.right)} px`);
        if (out.length >= 8) break;
      }
      return out;
    });
  }

  async sessionCookie() {
    const cookies = await this.context.cookies(this.base);
    return cookies.find((c) => c.name === 'mirobody_session');
  }
}

// ---------------------------------------------------------------- the steps

async function signup(flow) {
  await flow.visit('/console/signin', { stubSkips: false });
  await flow.shoot('signin');
  await flow.visit('/console/signup', { stubSkips: false });
  await flow.shoot('signup');
  await flow.page.fill('#email', flow.email);
  await flow.page.fill('#password', flow.password);
  await flow.submit('#signup');
  const cookie = await flow.sessionCookie();
  check(cookie, `no session cookie after sign-up (at ${flow.path()})`);
  check(cookie.httpOnly && cookie.sameSite === 'Lax' && cookie.path === '/', `cookie flags: ${JSON.stringify(cookie)}`);
  check(flow.path().startsWith('/console/'), `sign-up landed on ${flow.page.url()}`);
  const scriptReads = await flow.page.evaluate(() => document.cookie.includes('mirobody_session'));
  check(!scriptReads, 'the page script can read the session cookie');
  return { landed: flow.path(), cookie: { httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, secure: cookie.secure } };
}

async function signoutSignin(flow) {
  const before = (await flow.sessionCookie())?.value;
  await flow.visit('/console/password', { stubSkips: false });
  await flow.submit('form.signout button');
  check(flow.path() === '/console/signin', `sign-out landed on ${flow.page.url()}`);
  check(!(await flow.sessionCookie()), 'the session cookie outlived sign-out');
  // The old cookie, replayed by anyone who kept it, is ended on the server.
  const replay = await http('GET', `${flow.base}/console/data`, { headers: { cookie: `mirobody_session=${before}` } });
  check(replay.status === 303 && (replay.headers.get('location') || '').startsWith('/console/signin'),
    `the signed-out cookie still opens pages: ${replay.status}`);
  // Going to a page signed out leads to sign-in and back to that page.
  await flow.visit('/console/account', { stubSkips: false });
  check(flow.path() === '/console/signin', `a signed-out page went to ${flow.page.url()}`);
  await flow.page.fill('#email', flow.email);
  await flow.page.fill('#password', 'not the password at all');
  await flow.submit('#signin');
  const problem = await flow.text('[role=alert]');
  check(problem.includes('Wrong e-mail or password'), `a wrong password says ${JSON.stringify(problem)}`);
  await flow.page.fill('#email', flow.email);
  await flow.page.fill('#password', flow.password);
  await flow.submit('#signin');
  check(await flow.sessionCookie(), 'no session after sign-in');
  check(flow.path() === '/console/account', `sign-in went to ${flow.page.url()}, not back to /console/account`);
  return { replayed_cookie_status: replay.status, wrong_password: problem, back_to: flow.path() };
}

async function password(flow) {
  await flow.visit('/console/password', { stubSkips: false });
  await flow.shoot('password');
  await flow.page.fill('#current_password', flow.password);
  await flow.page.fill('#new_password', NEW_PASSWORD);
  await flow.submit('#change-password');
  check(!flow.page.url().includes('/console/signin'), `the password change signed this browser out: ${flow.page.url()}`);
  const old = await http('POST', `${flow.base}/auth/signin`, { json: { email: flow.email, password: flow.password } });
  check(old.status === 401, `the old password still signs in: ${old.status}`);
  flow.password = NEW_PASSWORD;
  const now = await http('POST', `${flow.base}/auth/signin`, { json: { email: flow.email, password: flow.password } });
  check(now.status === 200 && now.body?.data?.token, `the new password: ${now.status} ${now.text}`);
  flow.credentials.api_session = now.body.data.token;
  return { landed: flow.path(), old_password_status: old.status };
}

/** Picks a file on the upload page and follows the bar and the status to the end. */
async function upload(flow, kind, name, contents, shot, expect = 'done') {
  await flow.visit('/console/upload');
  const file = join(flow.files, name);
  writeFileSync(file, contents);
  await flow.page.selectOption('#upload-kind', kind);
  await flow.page.setInputFiles('#upload-file', file);
  // Record every state and progress value the page shows on the way (CDP evaluation is
  // not page script, so the page's CSP does not apply to this observer).
  await flow.page.evaluate(() => {
    const status = document.querySelector('#upload-status');
    const bar = document.querySelector('#upload-progress');
    window.__seen = { states: [status.dataset.state], progress: [Number(bar.value)] };
    const note = () => {
      const seen = window.__seen;
      if (seen.states[seen.states.length - 1] !== status.dataset.state) seen.states.push(status.dataset.state);
      const value = Number(bar.value);
      if (seen.progress[seen.progress.length - 1] !== value) seen.progress.push(value);
    };
    new MutationObserver(note).observe(status, { attributes: true, childList: true, subtree: true, characterData: true });
    new MutationObserver(note).observe(bar, { attributes: true });
    window.__poll = setInterval(note, 10);
  });
  await flow.page.click('#upload-start');
  await flow.page.waitForFunction(() => ['done', 'failed'].includes(document.querySelector('#upload-status').dataset.state),
    null, { timeout: STEP_TIMEOUT_MS });
  const seen = await flow.page.evaluate(() => {
    clearInterval(window.__poll);
    return window.__seen;
  });
  const state = await flow.page.getAttribute('#upload-status', 'data-state');
  const statusText = await flow.text('#upload-status');
  const bar = await flow.page.evaluate(() => {
    const p = document.querySelector('#upload-progress');
    return { value: Number(p.value), max: Number(p.max) };
  });
  if (shot) await flow.shoot(shot);
  check(state === expect, `the ${kind} upload ended ${state}: ${statusText}`);
  check(await flow.page.getAttribute('#upload-progress', 'data-state') === state, 'the bar does not show how the upload ended');
  check(await flow.page.getAttribute('#upload-status', 'aria-live') === 'polite', '#upload-status is not aria-live=polite');
  if (expect === 'done') {
    check(bar.max === 100 && bar.value === 100, `the progress bar ended at ${bar.value}/${bar.max}`);
    const see = kind === 'genotype' ? '/console/genome' : '/console/data';
    check(await flow.page.locator(`#upload-status a[href="${see}"]`).count() === 1, `the finished upload does not link to ${see}`);
  }
  return { state, status_text: statusText, progress: bar.value, seen_states: seen.states, seen_progress: seen.progress };
}

async function uploadGenome(flow) {
  const result = await upload(flow, 'genotype', 'genome.txt', GENOME, null);
  check(/\b4 (rows|variants|genotypes) written/.test(result.status_text), `the genome upload says ${JSON.stringify(result.status_text)}`);
  flow.uploadedGenome = true;
  return result;
}

async function uploadReadings(flow) {
  const result = await upload(flow, 'health', 'readings.csv', READINGS_CSV, 'upload');
  check(new RegExp(`\\b${READING_ROWS} rows written`).test(result.status_text),
    `the readings upload says ${JSON.stringify(result.status_text)}`);
  flow.uploadedReadings = true;
  return result;
}

/** A PDF chosen as readings: the upload fails, the bar says so, the words name the file. */
async function uploadWrongFile(flow) {
  const result = await upload(flow, 'health', 'lab-report.pdf', '%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\n', null, 'failed');
  check(result.status_text.includes('this is a PDF, not a readings file'), `the PDF upload says ${JSON.stringify(result.status_text)}`);
  const row = (await flow.text('#recent-uploads')).replace(/\s+/g, ' ');
  return { status_text: result.status_text, listed: row.includes('lab-report.pdf') };
}

async function chart(flow) {
  // The summary: a card per measure, HbA1c (uploaded as HbA1c) in the metabolic section
  // with its latest value and unit; the table one click away.
  await flow.visit('/console/data');
  await flow.shoot('summary');
  const card = flow.page.locator('#summary section[aria-labelledby="group-metabolic"] article.card[data-measure="Hemoglobin A1c"]');
  check(await card.count() === 1, 'the summary has no Hemoglobin A1c card under Metabolic');
  const cardValue = ((await card.locator('span.value').textContent()) || '').trim();
  check(/^[\d.]+ %$/.test(cardValue), `the HbA1c card's latest value: ${JSON.stringify(cardValue)}`);
  await flow.submit('a[href="/console/data?view=table"]');
  await flow.shoot('data');
  const rows = await flow.page.locator('table#catalogue tr[data-indicator]').count();
  const row = flow.page.locator('table#catalogue tr[data-indicator="Hemoglobin A1c"]');
  check(await row.count() === 1, `the catalogue has no Hemoglobin A1c row (uploaded as HbA1c) (${rows} rows)`);
  const rowText = (await row.innerText()).replace(/\s+/g, ' ').trim();
  check(rowText.includes('12'), `the HbA1c row does not count 12 readings: ${rowText}`);
  let genome = null;
  if (flow.uploadedGenome) {
    genome = (await flow.text('section#genome-summary')).replace(/\s+/g, ' ');
    check(/(^|\D)4 variants/.test(genome) && genome.includes('genome.txt'), `the genome summary: ${genome}`);
    check(await flow.page.locator('section#genome-summary a[href="/console/genome"]').count() >= 1, 'no link to /console/genome');
  }
  await flow.submit('table#catalogue tr[data-indicator="Hemoglobin A1c"] a');
  check(flow.path() === '/console/data/Hemoglobin%20A1c', `the indicator link went to ${flow.page.url()}`);
  const svg = flow.page.locator('svg.chart');
  check(await svg.isVisible(), 'no visible svg.chart');
  check(await svg.getAttribute('role') === 'img', 'svg.chart has no role=img');
  const title = ((await svg.locator('title').first().textContent()) || '').trim();
  check(title.length > 0, 'svg.chart has no <title>');
  const line = await svg.locator('path.line, .range').count();
  check(line >= 1, 'the chart draws no path.line or .range');
  const d = (await svg.locator('path.line').first().getAttribute('d').catch(() => null)) || '';
  const band = await svg.locator('rect.band').count();
  const latest = await flow.page.locator('table#latest tbody tr').count();
  check(latest >= 1, 'table#latest shows no readings');
  const latestText = (await flow.text('table#latest')).replace(/\s+/g, ' ');
  check(latestText.includes('5.'), `table#latest shows no HbA1c value: ${latestText}`);
  // A value on hover and on tap: the point under the pointer is named in the read-out.
  const box = await svg.boundingBox();
  await flow.page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
  const hovered = (await flow.text('p.readout')) || '';
  check(/^\d{4}-\d{2}(-\d{2})?: .*\d.* %/.test(hovered), `the read-out on hover: ${JSON.stringify(hovered)}`);
  await svg.click({ position: { x: 70, y: box.height / 2 } });
  const tapped = (await flow.text('p.readout')) || '';
  check(tapped !== hovered && /\d %/.test(tapped), `the read-out on tap: ${JSON.stringify(tapped)}`);
  check(await flow.page.locator('ul.legend li').count() >= 1, 'the chart has no legend');
  await flow.shoot('indicator');
  // The range control: a plain link, the chosen span marked.
  await flow.submit('nav.range a[href$="range=year"]');
  check(flow.page.url().endsWith('?range=year'), `the range link went to ${flow.page.url()}`);
  check(((await flow.text('nav.range a[aria-current="true"]')) || '') === 'Year', 'the chosen range is not marked');
  return { hovered, tapped, catalogue_rows: rows, hba1c_row: rowText, genome_summary: genome, chart_title: title, line_points: (d.match(/[ML]/g) || []).length, band: band > 0, latest_rows: latest };
}

/** The structured answer of `query_health_indicators` through `/mcp`. */
async function queryTool(flow, args) {
  const out = await mcp(`${flow.base}/mcp`, flow.credentials.api_session, 'tools/call', { name: 'query_health_indicators', arguments: args });
  const result = out.body?.result;
  check(out.status === 200 && result?.isError === false && result.structuredContent, `query_health_indicators ${JSON.stringify(args)}: ${out.status} ${out.text.slice(0, 500)}`);
  return result.structuredContent;
}

/** A figure's caption text, spaces collapsed. */
async function caption(flow, figure) {
  return (await flow.text(`${figure} figcaption`)).replace(/\s+/g, ' ');
}

/**
 * Truthful numbers on the page: uploads the export above, then reads the daily step totals, the
 * time in range, the glucose profile at 08:00 and each night's stages off the rendered
 * pages, and the same numbers through `/mcp`. The Rust test asserts the hand-worked values.
 */
async function truthfulNumbers(flow) {
  const uploaded = await upload(flow, 'apple_health', 'export.xml', appleExport(), null);
  check(new RegExp(`\\b${APPLE_ROWS} rows written`).test(uploaded.status_text), `the export upload says ${JSON.stringify(uploaded.status_text)}`);
  const page = {};
  // Steps: the chart's caption names the day totals.
  await flow.visit('/console/data/Steps');
  const steps = await caption(flow, 'figure.chart');
  const totals = steps.match(/values from ([\d,]+) steps to ([\d,]+) steps; the last point's total is ([\d,]+) steps/);
  check(totals, `the steps caption: ${steps}`);
  page.steps = { least_day: totals[1], most_day: totals[2], last_day: totals[3], latest: await flow.text('span.latest') };
  await flow.shoot('steps');
  // Glucose: the time in range, the profile (a picture, a legend, a description and a table).
  await flow.visit('/console/data/Glucose');
  const agp = flow.page.locator('svg.chart.agp');
  check(await agp.isVisible(), 'no visible svg.chart.agp');
  check(await agp.getAttribute('role') === 'img', 'svg.chart.agp has no role=img');
  check(await agp.locator('path.median').count() === 1 && await agp.locator('path.inner').count() === 1 && await agp.locator('path.outer').count() === 1 && await agp.locator('rect.target').count() === 1,
    'the profile lacks its median, bands or target range');
  const cells = {};
  for (const name of ['p5', 'p25', 'median', 'p75', 'p95', 'n']) {
    cells[name] = ((await flow.page.locator(`table#agp-table tr[data-hour="08"] td.${name}`).textContent()) || '').trim();
  }
  page.glucose = {
    in_range: await flow.text('#tir td.tir-in-range'),
    tir_text: (await flow.text('section#time-in-range p')).replace(/\s+/g, ' '),
    agp_08: cells,
    agp_hours: await flow.page.locator('table#agp-table tbody tr').count(),
    agp_legend: await flow.page.locator('section#agp ul.legend li').allInnerTexts(),
    agp_caption: await caption(flow, 'section#agp figure.chart'),
  };
  await flow.shoot('glucose');
  // Sleep: the stages stacked per night, read from the table under the picture.
  await flow.visit('/console/data/Sleep%20asleep');
  const stacked = flow.page.locator('svg.chart.stages');
  check(await stacked.isVisible(), 'no visible svg.chart.stages');
  const nights = {};
  for (const row of await flow.page.locator('table#stages-table tbody tr').all()) {
    const night = await row.getAttribute('data-night');
    nights[night] = {};
    for (const stage of ['core', 'deep', 'rem', 'awake']) {
      nights[night][stage] = ((await row.locator(`td.${stage}`).textContent()) || '').trim();
    }
  }
  page.sleep = {
    nights,
    bars: await stacked.locator('rect[data-night]').count(),
    legend: await flow.page.locator('section#stages ul.legend li').allInnerTexts(),
    asleep_latest: await flow.text('span.latest'),
  };
  await flow.shoot('sleep');
  // The same numbers from the tool.
  const stepDays = await queryTool(flow, { indicators: ['Steps'], aggregate: 'day' });
  const stats = await queryTool(flow, { indicators: ['Glucose'], aggregate: 'stats' });
  const profile = await queryTool(flow, { indicators: ['Glucose'], aggregate: 'profile' });
  const stageDays = await queryTool(flow, { indicators: ['Sleep core', 'Sleep deep', 'Sleep REM', 'Sleep awake'], aggregate: 'day' });
  const tool = {
    steps_days: stepDays.indicators[0].rows,
    in_range: stats.indicators[0].cgm?.time_in_range_70_180_pct,
    readings: stats.indicators[0].cgm?.readings,
    profile_window: [profile.indicators[0].from, profile.indicators[0].to],
    profile_08: profile.indicators[0].rows.find((r) => r.startsWith('08|')),
    stage_days: Object.fromEntries(stageDays.indicators.map((i) => [i.name, i.rows])),
  };
  return { upload: uploaded.status_text, page, tool };
}

async function genomeLookup(flow) {
  await flow.visit('/console/genome');
  await flow.page.fill('#rsid', 'rs4680, rs429358');
  await flow.submit('#lookup');
  await flow.shoot('genome');
  const rows = {};
  for (const rsid of ['rs4680', 'rs429358']) {
    const row = flow.page.locator(`table#genotypes tr[data-rsid="${rsid}"]`);
    check(await row.count() === 1, `no genotype row for ${rsid}`);
    rows[rsid] = (await row.innerText()).replace(/\s+/g, ' ').trim();
  }
  check(rows.rs4680.includes('AG') && rows.rs429358.includes('TC'), `genotypes: ${JSON.stringify(rows)}`);
  return { rows };
}

async function personalUrl(flow) {
  await flow.visit('/console/connect');
  await flow.submit('form#url-create button');
  const url = await flow.text('code#personal-url');
  check(url.startsWith(`${flow.base}/mcp/`), `the personal URL: ${JSON.stringify(url)}`);
  for (const id of ['claude-desktop', 'cursor', 'remote-connectors', 'python-sdk', 'typescript-sdk']) {
    check(await flow.page.locator(`#${id}`).count() === 1, `no #${id} instructions`);
  }
  await flow.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: flow.base });
  await flow.page.click('button[data-copy="personal-url"]');
  const copied = await flow.page.evaluate(() => navigator.clipboard.readText());
  check(copied.trim() === url, `the copy button copied ${JSON.stringify(copied)}`);
  await flow.shoot('connect');
  flow.credentials.personal_url = url;
  // The Python SDK client uses the pasted URL.
  const args = { keywords: ['HbA1c'] };
  const out = execFileSync(flow.opts.python, ['tests/clients/python_client.py', url, MODERN, '--tool', 'query_health_indicators', '--args', JSON.stringify(args)],
    { encoding: 'utf8', timeout: STEP_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
  const line = out.split('\n').reverse().find((l) => l.startsWith('{'));
  const report = JSON.parse(line);
  check(report.tools.includes('query_health_indicators'), `the SDK lists ${JSON.stringify(report.tools)}`);
  check(report.is_error === false, `the SDK's tool call failed: ${report.text}`);
  if (flow.uploadedReadings) check(report.text.includes('Hemoglobin A1c'), `the SDK's HbA1c readings: ${report.text}`);
  return { url_shape: `${flow.base}/mcp/…`, copied: true, sdk: { tools: report.tools.length, via: report.via, protocol: report.protocol } };
}

async function mcpServer(flow) {
  await flow.visit('/console/servers');
  await flow.page.fill('#server-name', 'shop');
  await flow.page.fill('#server-url', flow.opts.remote);
  await flow.page.selectOption('#server-auth-type', 'bearer');
  await flow.page.fill('#server-credential', flow.opts.remoteToken);
  await flow.page.check('#server-enabled');
  await flow.submit('#server-add-button');
  const row = flow.page.locator('table#servers tr[data-server="shop"]');
  check(await row.count() === 1, `no row for the server (${flow.path()}: ${await flow.text('main')})`);
  const tools = (await row.locator('td.tools').textContent()).replace(/\s+/g, ' ').trim();
  check(tools.includes('lookup_order') && tools.includes('create_ticket'), `the server's tools: ${tools}`);
  check(!(await flow.page.content()).includes(flow.opts.remoteToken), 'the page shows the server credential');
  await flow.submit('table#servers tr[data-server="shop"] .server-probe');
  const again = flow.page.locator('table#servers tr[data-server="shop"] td.tools');
  check(((await again.textContent()) || '').includes('lookup_order'), 'the re-probe lost the tools');
  const lastError = ((await flow.page.locator('table#servers tr[data-server="shop"] td.last-error').textContent()) || '').trim();
  await flow.shoot('servers');
  // The registered tools reach the account's MCP.
  const listed = await mcp(`${flow.base}/mcp`, flow.credentials.api_session, 'tools/list');
  const names = (listed.body?.result?.tools || []).map((t) => t.name);
  check(names.includes('mcp__shop__lookup_order'), `/mcp lists ${JSON.stringify(names)}`);
  return { tools, last_error: lastError, mcp_lists: names.filter((n) => n.startsWith('mcp__shop__')) };
}

async function oauthRevoke(flow) {
  await flow.visit('/console/access');
  const callback = await callbackServer();
  try {
    const reg = await http('POST', `${flow.base}/oauth/register`, {
      json: { client_name: 'Console Browser Client', redirect_uris: [callback.redirectUri], token_endpoint_auth_method: 'none' },
    });
    check(reg.status === 201, `/oauth/register answered ${reg.status}: ${reg.text}`);
    const clientId = reg.body.client_id;
    const verifier = b64url(randomBytes(48));
    const challenge = b64url(createHash('sha256').update(verifier).digest());
    const resource = `${flow.base}/mcp`;
    const authorize = new URL(`${flow.base}/oauth/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code', client_id: clientId, redirect_uri: callback.redirectUri, scope: 'mcp:tools',
      state: 's1', code_challenge: challenge, code_challenge_method: 'S256', resource,
    }).toString();
    const redirected = callback.next();
    redirected.catch(() => {});
    // Signed in to the console in this browser: the consent names the account and
    // asks for no second password.
    await flow.page.goto(authorize.toString(), { waitUntil: 'load' });
    const signedIn = ((await flow.text('#signed-in')) || '').replace(/\s+/g, ' ');
    check(signedIn.includes(`You are signed in as ${flow.email}`), `the consent page: ${signedIn}`);
    check(await flow.page.locator('#password').count() === 0, 'the consent page asks for the password again');
    await flow.shoot('consent');
    await Promise.all([flow.page.waitForEvent('load'), flow.page.click('#allow')]);
    const params = await redirected;
    check(params.code, `no code: ${JSON.stringify(params)}`);
    const tokens = await http('POST', `${flow.base}/oauth/token`, {
      form: { grant_type: 'authorization_code', code: params.code, redirect_uri: callback.redirectUri, client_id: clientId, code_verifier: verifier, resource },
    });
    check(tokens.status === 200 && tokens.body.refresh_token, `code exchange: ${tokens.status} ${tokens.text}`);
    flow.credentials.oauth_access = tokens.body.access_token;

    await flow.visit('/console/access');
    const row = flow.page.locator(`table#oauth-grants tr[data-client-id="${clientId}"]`);
    check(await row.count() === 1, 'the authorised client is not listed');
    const rowText = (await row.innerText()).replace(/\s+/g, ' ').trim();
    check(rowText.includes('Console Browser Client'), `the grant row: ${rowText}`);
    for (const id of ['section#personal-url-status', 'table#temporary-urls', 'table#shares-granted', 'table#shares-received', 'form#signout-all']) {
      check(await flow.page.locator(id).count() === 1, `no ${id}`);
    }
    await flow.shoot('access');
    await flow.submit(`table#oauth-grants tr[data-client-id="${clientId}"] button.grant-revoke`);
    check(await flow.page.locator(`table#oauth-grants tr[data-client-id="${clientId}"]`).count() === 0, 'the revoked client is still listed');
    const refreshed = await http('POST', `${flow.base}/oauth/token`, {
      form: { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: clientId },
    });
    check(refreshed.status === 400 && refreshed.body.error === 'invalid_grant', `the revoked refresh token: ${refreshed.status} ${refreshed.text}`);
    return { grant_row: rowText, refresh_after_revoke: refreshed.body.error };
  } finally {
    await callback.close();
  }
}

/** Every page at both widths, before the account goes (signed-out pages were shot at sign-up). */
async function screenshots(flow) {
  const pages = [
    ['summary', '/console/data'],
    ['data', '/console/data?view=table'],
    ['indicator', '/console/data/HbA1c'],
    ['genome', '/console/genome?rsid=rs4680%2C+rs429358'],
    ['upload', '/console/upload'],
    ['connect', '/console/connect'],
    ['servers', '/console/servers'],
    ['access', '/console/access'],
    ['account', '/console/account'],
    ['password', '/console/password'],
  ];
  for (const [name, path] of pages) {
    // (The indicator page may say 404 when the readings step could not run.)
    await flow.visit(path, { stubSkips: false, below: 500 });
    await flow.shoot(name);
  }
  return { pages: pages.length + 2 };
}

async function exportAll(flow) {
  await flow.visit('/console/account');
  const [download] = await Promise.all([flow.page.waitForEvent('download'), flow.page.click('a#export')]);
  const file = join(flow.files, 'export');
  await download.saveAs(file);
  const bytes = readFileSync(file);
  check(bytes.length > 0, 'an empty export');
  // One JSON document, possibly gzip-compressed, or a zip archive.
  const zip = bytes[0] === 0x50 && bytes[1] === 0x4b;
  const gzip = bytes[0] === 0x1f && bytes[1] === 0x8b;
  const text = zip ? '' : (gzip ? gunzipSync(bytes) : bytes).toString('utf8');
  if (!zip) {
    JSON.parse(text);
    check(text.includes(flow.email), 'the export lacks the account');
    if (flow.uploadedReadings) check(text.includes('HbA1c'), 'the export lacks the readings');
    if (flow.uploadedGenome) check(text.includes('rs4680'), 'the export lacks the genotypes');
    check(!text.includes(flow.opts.remoteToken), 'the export holds the MCP server credential');
    check(!text.includes(flow.password), 'the export holds the password');
  }
  return { file_name: download.suggestedFilename(), bytes: bytes.length, format: zip ? 'zip' : (gzip ? 'json.gz' : 'json') };
}

async function deleteAccount(flow) {
  await flow.visit('/console/account');
  await flow.page.fill('#delete-password', flow.password);
  await flow.submit('#delete-account-button');
  const landed = flow.page.url();
  const refused = {};
  await flow.visit('/console/data', { stubSkips: false });
  check(flow.path() === '/console/signin', `after deletion /console/data shows ${flow.page.url()}`);
  const cookieReplay = await http('GET', `${flow.base}/console/data`, { headers: { cookie: `mirobody_session=${flow.lastCookie}` } });
  refused.console_cookie = cookieReplay.status;
  check(cookieReplay.status === 303, `the deleted account's cookie: ${cookieReplay.status}`);
  const signin = await http('POST', `${flow.base}/auth/signin`, { json: { email: flow.email, password: flow.password } });
  refused.password = signin.status;
  check(signin.status === 401, `the deleted account signs in: ${signin.status}`);
  if (flow.credentials.api_session) {
    const api = await http('GET', `${flow.base}/api/data`, { headers: { authorization: `Bearer ${flow.credentials.api_session}` } });
    refused.api_session = api.status;
    check(api.status === 401, `the deleted account's session token: ${api.status}`);
  }
  if (flow.credentials.personal_url) {
    const url = await mcp(flow.credentials.personal_url, null, 'tools/list');
    refused.personal_url = url.status;
    check(url.status === 404 || url.status === 401, `the deleted account's personal URL: ${url.status}`);
  }
  if (flow.credentials.oauth_access) {
    const call = await mcp(`${flow.base}/mcp`, flow.credentials.oauth_access, 'tools/list');
    refused.oauth_access = call.status;
    check(call.status === 401, `the deleted account's OAuth access token: ${call.status}`);
  }
  return { landed: new URL(landed).pathname, refused };
}


// ---------------------------------------------------------------- e-mail

/** The newest link to `path` the server mailed to `to` (its mail directory), waiting 5 s. */
async function mailedLink(flow, to, path) {
  const deadline = Date.now() + 5_000;
  const pattern = new RegExp(`https?://\\S+${path.replace(/\//g, '\\/')}\\?token=[A-Za-z0-9_-]+`);
  for (;;) {
    const files = readdirSync(flow.opts.mailDir).filter((f) => f.endsWith('.eml')).sort().reverse();
    for (const file of files) {
      const text = readFileSync(join(flow.opts.mailDir, file), 'utf8');
      if (!text.includes(`\r\nTo: ${to}\r\n`)) continue;
      const found = text.match(pattern);
      if (found) return found[0];
    }
    check(Date.now() < deadline, `no ${path} link mailed to ${to} in ${flow.opts.mailDir}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function confirmAddress(flow) {
  const link = await mailedLink(flow, flow.email, '/console/confirm');
  check(new URL(link).origin === flow.base, `the link leaves the site: ${link}`);
  await flow.page.goto(link, { waitUntil: 'load' });
  await flow.shoot('confirm');
  await flow.submit('#confirm');
  const done = await flow.text('[role=status]');
  check(done.includes('confirmed'), `confirming says ${JSON.stringify(done)}`);
  // A link works once.
  await flow.page.goto(link, { waitUntil: 'load' });
  await flow.submit('#confirm');
  const again = await flow.text('main');
  check(again.includes('not valid'), `a used link says ${JSON.stringify(again)}`);
  return { confirmed: true, used_again: again.slice(0, 80) };
}

async function acceptInvitation(flow) {
  // Someone else shares with this address (through the JSON API).
  const friend = `friend-${b64url(randomBytes(4)).toLowerCase().replace(/[^a-z0-9]/g, 'x')}@example.test`;
  const made = await http('POST', `${flow.base}/auth/signup`, { json: { email: friend, password: PASSWORD } });
  check(made.status === 201, `the friend's sign-up: ${made.status} ${made.text}`);
  const friendToken = made.body.data.token;
  const shared = await http('POST', `${flow.base}/api/shares`, {
    json: { grantee: flow.email, permissions: ['chat'] },
    headers: { authorization: `Bearer ${friendToken}` },
  });
  check(shared.status === 200 && shared.body?.data?.status === 'invited', `sharing: ${shared.status} ${shared.text}`);
  await flow.visit('/console/access');
  const rows = flow.page.locator('#invitations-received tr[data-invitation]');
  check((await rows.count()) === 1, `invitations shown: ${await rows.count()}`);
  check((await rows.first().innerText()).includes(friend), 'the invitation names who sent it');
  await flow.submit('#invitations-received button.invitation-accept');
  const received = await flow.text('#shares-received');
  check(received.includes(friend), `after accepting, shares received: ${JSON.stringify(received)}`);
  const listed = await http('GET', `${flow.base}/api/shares`, { headers: { authorization: `Bearer ${friendToken}` } });
  const granted = listed.body?.data?.granted ?? [];
  check(granted.length === 1 && granted[0].email === flow.email && granted[0].status === 'accepted',
    `the friend sees who accepted: ${listed.text}`);
  // A share offered here waits as an invitation.
  const invitee = `invitee-${b64url(randomBytes(4)).toLowerCase().replace(/[^a-z0-9]/g, 'x')}@example.test`;
  await flow.page.fill('#grantee', invitee);
  await flow.submit('#share');
  const offered = await flow.text('#shares-granted');
  check(offered.includes(invitee) && offered.includes('Invited'), `the offered share: ${JSON.stringify(offered)}`);
  return { accepted_from: 'friend', offered: 'pending' };
}

async function forgotReset(flow) {
  await flow.visit('/console/signin', { stubSkips: false });
  await flow.submit('#forgot');
  check(flow.path() === '/console/forgot', `"forgot" went to ${flow.page.url()}`);
  await flow.shoot('forgot');
  await flow.page.fill('#email', flow.email);
  await flow.submit('#send-reset');
  check((await flow.text('#reset-sent')).includes('minutes'), 'the reset page says how long the link works');
  const link = await mailedLink(flow, flow.email, '/console/reset');
  await flow.page.goto(link, { waitUntil: 'load' });
  await flow.shoot('reset');
  await flow.page.fill('#new_password', RESET_PASSWORD);
  await flow.submit('#reset');
  const done = await flow.text('[role=status]');
  check(done.includes('password was changed'), `resetting says ${JSON.stringify(done)}`);
  check(!(await flow.sessionCookie()), 'the session cookie outlived the reset');
  const old = await http('GET', `${flow.base}/api/shares`, { headers: { authorization: `Bearer ${flow.credentials.api_session}` } });
  check(old.status === 401, `a session from before the reset: ${old.status}`);
  flow.password = RESET_PASSWORD;
  await flow.visit('/console/signin', { stubSkips: false });
  await flow.page.fill('#email', flow.email);
  await flow.page.fill('#password', flow.password);
  await flow.submit('#signin');
  check(await flow.sessionCookie(), 'no session after signing in with the reset password');
  const now = await http('POST', `${flow.base}/auth/signin`, { json: { email: flow.email, password: flow.password } });
  check(now.status === 200 && now.body?.data?.token, `the reset password: ${now.status}`);
  flow.credentials.api_session = now.body.data.token;
  return { old_session_status: old.status };
}

const STEPS = [
  ['signup', signup],
  ['signout_signin', signoutSignin],
  ['password', password],
  ['confirm_address', confirmAddress],
  ['accept_invitation', acceptInvitation],
  ['forgot_reset', forgotReset],
  ['upload_genome', uploadGenome],
  ['upload_readings', uploadReadings],
  ['upload_wrong_file', uploadWrongFile],
  ['chart', chart],
  ['truthful_numbers', truthfulNumbers],
  ['genome_lookup', genomeLookup],
  ['personal_url', personalUrl],
  ['mcp_server', mcpServer],
  ['oauth_revoke', oauthRevoke],
  ['screenshots', screenshots],
  ['export', exportAll],
  ['delete_account', deleteAccount],
];
// Without these the rest cannot run.
const REQUIRED = new Set(['signup', 'signout_signin', 'password']);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  mkdirSync(opts.screenshots, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'mirobody-chromium-'));
  const offLoopback = [];
  let context;
  let flow;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: STEP_TIMEOUT_MS,
      viewport: VIEWPORTS[0],
      acceptDownloads: true,
    });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    context.on('request', (request) => {
      const { protocol, hostname } = new URL(request.url());
      if ((protocol === 'http:' || protocol === 'https:') && !isLoopback(hostname)) offLoopback.push(request.url());
    });
    flow = new Flow(opts, context);
    await flow.open();
    const steps = [];
    let stop = false;
    for (const [name, run] of STEPS) {
      if (stop) {
        steps.push({ name, status: 'not_run' });
        continue;
      }
      const started = Date.now();
      try {
        // The cookie before the step: the account deletion replays it afterwards.
        flow.lastCookie = (await flow.sessionCookie())?.value;
        const details = await run(flow);
        steps.push({ name, status: 'passed', ms: Date.now() - started, ...details });
      } catch (e) {
        if (e instanceof Skipped) {
          steps.push({ name, status: 'skipped', reason: e.message });
          console.error(`console_browser: SKIPPED ${name}: ${e.message}`);
        } else {
          steps.push({ name, status: 'failed', error: String(e?.message || e), at: flow.page?.url() });
          console.error(`console_browser: ${name} failed: ${e?.stack || e}`);
          if (REQUIRED.has(name)) stop = true;
          await flow.page?.screenshot({ path: join(opts.screenshots, `failed-${name}.png`), fullPage: true }).catch(() => {});
        }
      }
    }
    const oversized = Object.entries(flow.pageSizes).filter(([, size]) => size >= PAGE_LIMIT);
    const report = {
      ok: steps.every((s) => s.status === 'passed' || s.status === 'skipped')
        && offLoopback.length === 0 && flow.cspViolations.length === 0 && oversized.length === 0,
      chromium: context.browser()?.version() ?? null,
      steps,
      screenshots: opts.screenshots,
      screenshot_files: flow.screenshots.length,
      page_sizes: flow.pageSizes,
      oversized_pages: oversized,
      csp_violations: flow.cspViolations,
      axe_checked: flow.axeChecked,
      axe_violations: flow.axeViolations,
      off_loopback_requests: offLoopback,
    };
    console.log(JSON.stringify(report));
    if (!report.ok) process.exitCode = 1;
  } finally {
    if (context) await context.close().catch(() => {});
    if (flow) rmSync(flow.files, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    console.error(`console_browser error: ${e?.stack || e}`);
    process.exit(1);
  },
);
