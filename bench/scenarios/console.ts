// The operator console's first load (docs/console.md) in headless Chromium, next to the server's static landing page
// loaded the same way in the same run: bytes transferred, requests, time to interactive; then a sign-in to the doors
// screen of a tenant with 10,000 locks (the screen asks the server for one page of them).
import type pg from 'pg';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { CHROMIUM_PATH, chromiumMissing, offlineChromiumArgs } from '../../test/helpers/chromium.js';
import { median, round, scaleTenant, seedDevicesAndLocks, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

const LOCKS = 10_000;
const PASSWORD = 'bench console password';
const UI_TIMEOUT_MS = 60_000;

/**
 * Marks in page time (milliseconds since the document's navigation started), set by a script the browser runs in
 * every document before the page's own: `interactive` when the console's first screen shows its form's submit button
 * enabled (React has committed it with its handlers), `doors` when the doors screen's status reports its first page.
 */
const MARKS_SCRIPT = `
  window.__benchMarks = {};
  const check = () => {
    const marks = window.__benchMarks;
    if (!location.pathname.startsWith('/console')) return;
    const button = document.querySelector('main form button[type=submit]');
    if (marks.interactive === undefined && button && !button.disabled) marks.interactive = performance.now();
    const status = document.querySelector('main p[role=status]');
    if (marks.doors === undefined && status && /^Page 1:/.test(status.textContent || '')) marks.doors = performance.now();
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
`;

interface Marks {
  interactive?: number;
  doors?: number;
}

/** Bytes on the wire (headers and bodies, as Chromium's network panel counts them) and responses, since the last reset. */
class Traffic {
  bytes = 0;
  responses = 0;
  private constructor(private readonly session: CDPSession) {}

  static async watch(context: BrowserContext, page: Page): Promise<Traffic> {
    const session = await context.newCDPSession(page);
    const traffic = new Traffic(session);
    // A fresh browser context starts with an empty cache: every run's first load is cold.
    await session.send('Network.enable');
    session.on('Network.loadingFinished', (event) => {
      traffic.bytes += event.encodedDataLength;
      traffic.responses += 1;
    });
    return traffic;
  }

  take(): { bytes: number; responses: number } {
    const taken = { bytes: this.bytes, responses: this.responses };
    this.bytes = 0;
    this.responses = 0;
    return taken;
  }

  close(): Promise<void> {
    return this.session.detach().catch(() => undefined);
  }
}

async function marksOf(page: Page): Promise<Marks> {
  return (await page.evaluate('window.__benchMarks')) as Marks;
}

/** The navigation's load event end, in page time. */
async function loadEventEnd(page: Page): Promise<number> {
  return (await page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")) as number;
}

interface Sample {
  landingMs: number;
  landing: { bytes: number; responses: number };
  interactiveMs: number;
  consoleLoadMs: number;
  console: { bytes: number; responses: number };
  doorsMs: number;
  doors: { bytes: number; responses: number };
}

/** One cold run in a fresh browser context: the landing page, then the console, then its sign-in to the doors screen. */
async function oneRun(browser: Browser, origin: string, tenant: string): Promise<Sample> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    await context.addInitScript(MARKS_SCRIPT);
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const traffic = await Traffic.watch(context, page);

    // The reference: the server's landing page, static HTML without a script or style sheet.
    await page.goto(`${origin}/`, { waitUntil: 'load' });
    const landingMs = await loadEventEnd(page);
    const landing = traffic.take();

    // The console's first load, cache cold: its HTML, script, style sheet and icon, up to its first screen.
    await page.goto(`${origin}/console/?tenant=${encodeURIComponent(tenant)}`, { waitUntil: 'load' });
    await page.getByRole('button', { name: 'Continue to sign-in' }).waitFor();
    const interactiveMs = (await marksOf(page)).interactive;
    if (interactiveMs === undefined) throw new Error('the console showed its sign-in but the page never marked it interactive');
    const consoleLoadMs = await loadEventEnd(page);
    const consoleTraffic = traffic.take();

    // Sign-in (authorization code with PKCE) to the doors screen's first page: timed in the page that the form's
    // post leads to, from that navigation's start (the post) to the page of doors on screen.
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    await page.waitForURL((url) => url.pathname === '/oauth/authorize');
    await page.getByLabel('User (USER@TENANT)').fill(`ada@${tenant}`);
    await page.getByLabel('Password').fill(PASSWORD);
    traffic.take();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('status').filter({ hasText: /^Page 1: 25 doors/ }).waitFor();
    const doorsMs = (await marksOf(page)).doors;
    if (doorsMs === undefined) throw new Error('the doors screen showed its first page but the page never marked it');
    const doors = traffic.take();
    await traffic.close();
    return { landingMs, landing, interactiveMs, consoleLoadMs, console: consoleTraffic, doorsMs, doors };
  } finally {
    await context.close();
  }
}

async function consoleFirstLoad(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const missing = chromiumMissing('The console first-load bench');
  if (missing) throw new Error(missing);
  const name = `scale-console-${process.pid}`;
  const tenant = await scaleTenant(context, db, name);
  await context.cli(['user', 'create', `ada@${name}`, '--password-stdin', '--role', 'operator'], `${PASSWORD}\n`);
  await seedDevicesAndLocks(db, tenant.tenantId, 'console', 0, LOCKS, Date.now());
  await db.query('ANALYZE secured_objects');

  const origin = new URL(context.appUrl);
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: offlineChromiumArgs(origin.hostname) });
  try {
    // One run unmeasured: the browser's own first start of a renderer, and the server's first requests of each kind.
    await oneRun(browser, origin.origin, name);
    const samples: Sample[] = [];
    for (let run = 0; run < context.runs; run++) samples.push(await oneRun(browser, origin.origin, name));

    const pick = (value: (sample: Sample) => number) => median(samples.map(value));
    const interactive = pick((sample) => sample.interactiveMs);
    const landing = pick((sample) => sample.landingMs);
    const bytes = pick((sample) => sample.console.bytes);
    const landingBytes = pick((sample) => sample.landing.bytes);
    const doors = pick((sample) => sample.doorsMs);
    const samplesOf = (value: (sample: Sample) => number) => samples.map((sample) => round(value(sample), 1)).join('/');
    return [
      {
        name: 'console first load (headless Chromium, cold cache)',
        description:
          'GET /console/ in a fresh browser context up to its sign-in screen rendered with its handlers (time to interactive, ' +
          'page time from the navigation\'s start) and every byte it transferred, vs the server\'s static landing page GET / ' +
          'loaded the same way (its load event)',
        serviceSeconds: round(interactive / 1000),
        baselineSeconds: round(landing / 1000),
        reference: 'the static landing page GET /',
        ratio: round(interactive / landing, 2),
        goalRatio: null,
        goalMet: null,
        details: {
          timeToInteractiveMs: round(interactive, 1),
          loadEventMs: round(pick((sample) => sample.consoleLoadMs), 1),
          bytes,
          responses: pick((sample) => sample.console.responses),
          landingLoadMs: round(landing, 1),
          landingBytes,
          bytesRatio: round(bytes / landingBytes, 1),
          runs: context.runs,
          interactiveSamplesMs: samplesOf((sample) => sample.interactiveMs),
          landingSamplesMs: samplesOf((sample) => sample.landingMs),
        },
      },
      {
        name: `console sign-in to the doors screen (${LOCKS.toLocaleString('en')} doors)`,
        description:
          'from posting the sign-in form to the doors screen showing its first page of 25 (the code and PKCE exchange, ' +
          'the console loaded again from the cache, GET /operatorapi/securedobjects?limit=25), in a tenant of ' +
          `${LOCKS.toLocaleString('en')} locks`,
        serviceSeconds: round(doors / 1000),
        baselineSeconds: null,
        ratio: null,
        goalRatio: null,
        goalMet: null,
        details: {
          signInToDoorsMs: round(doors, 1),
          bytes: pick((sample) => sample.doors.bytes),
          responses: pick((sample) => sample.doors.responses),
          runs: context.runs,
          samplesMs: samplesOf((sample) => sample.doorsMs),
        },
      },
    ];
  } finally {
    await browser.close();
  }
}

export const consoleScaleRuns: ScaleRun[] = [{ name: 'console first load in headless Chromium', run: consoleFirstLoad }];
