// The operator console (docs/console.md) in a real browser: Debian's chromium driven by playwright-core against a
// server on a port. Sign-in with the authorization code and PKCE; each screen on real data with axe-core finding no
// serious or critical violation; "revoke everywhere" by keyboard alone, its live count reaching "applied" once the
// locks sync; the access log's CSV export of every page; a bulk import by keyboard alone; the Content-Security-Policy.
// Takes the README's screenshot, docs/console.png (written where missing or with UPDATE_SCREENSHOTS=1).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type BrowserContext, type FileChooser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockGroup, permission, resident, userToken, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync } from '../helpers/device.js';
import { bearer, clientToken, createClient, createUser } from '../helpers/oauth.js';
import { call, device, HOUR, lock, LOCK_UUID, registerLock, ticket } from '../helpers/operator.js';
import { CHROMIUM_PATH, chromiumMissing as missingChromium, offlineChromiumArgs } from '../helpers/chromium.js';
import { ROOT } from '../helpers/process.js';
import { startReceiver, type Receiver } from '../helpers/webhooks.js';
// The console's own formatting of a lock-time instant: the expected text is the same function the screen uses.
import { lockTime } from '../../console/src/wall-clock.js';
import { ACCESS_API_SCOPES } from '../helpers/access.js';

const chromiumMissing = missingChromium('Console browser test');

/** Not loopback: a browser exempts loopback from rules a real deployment meets. The resolver sends it to the server. */
const HOST = 'console.test';
const PASSWORD = 'correct horse battery staple';
const UI_TIMEOUT = 30_000;
const LOG_ENTRIES = { front: 700, side: 550 };
/**
 * Waits for a condition the page reaches, within the same deadline as every locator wait: vitest's own default for
 * expect.poll is 1 s, which one slow round trip to a loaded browser overruns while the page is already right.
 */
const UNTIL = { timeout: UI_TIMEOUT, interval: 100 };
/** Doors registered beyond the first page of the doors screen (DOORS_PER_PAGE, 25), all found by searching `hall`. */
const HALLS = 30;
/** Bob's ticket for the garden gate: every day, all day, on the gate's clock in Helsinki. */
const GARDEN_ZONE = 'Europe/Helsinki';
const ALL_DAY = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'], from: '00:00', to: '00:00' }] };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// The page's globals that the functions run in the browser below use: the suite compiles without the DOM library.
interface FocusedElement {
  tagName: string;
  innerText: string;
  textContent: string | null;
  closest(selector: string): { textContent: string | null } | null;
}
declare const document: { activeElement: FocusedElement | null };
declare const localStorage: { length: number };
declare const sessionStorage: { length: number };

/**
 * Presses Tab until the focused control is `name`: a link or button with exactly that text, or a form control whose
 * label starts with it. Fails after `limit` presses.
 */
async function tabTo(page: Page, name: string, limit = 80): Promise<void> {
  for (let presses = 0; presses < limit; presses++) {
    await page.keyboard.press('Tab');
    const found = await page.evaluate((wanted) => {
      const element = document.activeElement;
      if (!element) return false;
      if (element.tagName === 'A' || element.tagName === 'BUTTON') return element.innerText.trim() === wanted;
      if (['INPUT', 'SELECT', 'TEXTAREA'].includes(element.tagName)) return (element.closest('label')?.textContent ?? '').startsWith(wanted);
      return false;
    }, name);
    if (found) return;
  }
  throw new Error(`no element named “${name}” within ${limit} presses of Tab`);
}

describe.skipIf(chromiumMissing !== null)('the operator console in chromium', () => {
  let t: TestApp;
  let origin: string;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;
  let acme: AccessTenant;
  let alice: { id: string };
  let receiver: Receiver;
  const pageErrors: string[] = [];
  /** Called with each file chooser the page opens (intercepted from the start: see beforeAll). */
  let onFileChooser: (chooser: FileChooser) => void = () => undefined;
  const lockTokens: Record<string, string> = {};
  const cursors: Record<string, string> = {};

  beforeAll(async () => {
    const port = await freePort();
    origin = `http://${HOST}:${port}`;
    t = await buildTestApp({ BCRYPT_COST: '4', PUBLIC_URL: origin, WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_WORKER_INTERVAL_MS: '60000' });
    await t.app.listen({ port, host: '127.0.0.1' });

    // A tenant with the Access API client the helpers use, and a console user with a role.
    const created = await t.app.services.tenants.create('acme');
    const tenant = { tenantId: created.tenant.id, name: 'acme', clientId: created.clientId, clientSecret: created.clientSecret };
    const operator = await clientToken(t.app, tenant);
    const client = await createClient(t.app, tenant, ACCESS_API_SCOPES);
    const manager = await createUser(t.app, tenant, 'manager', PASSWORD);
    acme = { tenant, operator, client, userId: manager.id, login: 'manager@acme', token: '', actor: `user:${manager.id}` };
    acme.token = await userToken(t, acme);
    await t.app.services.users.create({ tenantId: tenant.tenantId, actor: 'cli', requestId: null }, 'ada', PASSWORD, 'admin');

    // Two doors, Alice with a phone and a permission on both, Bob with a direct ticket on the front door.
    const now = t.app.services.clock();
    for (const id of ['front', 'side']) await lock(t, operator, id);
    const garden = await registerLock(t, operator, { id: 'garden', channels: ['btlespp'], localName: 'GARDEN-GATE', uuid: LOCK_UUID, timeZone: GARDEN_ZONE });
    expect(garden.statusCode, garden.body).toBe(201);
    for (let hall = 1; hall <= HALLS; hall++) await lock(t, operator, `hall-${String(hall).padStart(2, '0')}`);
    for (const id of ['phone-alice', 'phone-bob']) await device(t, operator, id);
    alice = await resident(t, acme.token, 'Alice Example', ['phone-alice']);
    await resident(t, acme.token, 'Bob Example', ['phone-bob']);
    const doors = await lockGroup(t, acme.token, 'All doors', ['front', 'side']);
    await permission(t, acme.token, alice.id, doors.id, { beginDate: now - HOUR, endDate: now + 30 * 24 * HOUR });
    await ticket(t, operator, 'front', 'phone-bob', { beginDate: now - HOUR, endDate: now + 30 * 24 * HOUR });
    await ticket(t, operator, 'garden', 'phone-bob', { beginDate: now - HOUR, endDate: now + 30 * 24 * HOUR, schedule: ALL_DAY });
    // Alice's phone downloads its credentials: the locks will need the revocations. The locks sync once now.
    await download(t, await phoneToken(t, tenant, 'phone-alice'), 'phone-alice');
    for (const id of ['front', 'side']) {
      lockTokens[id] = await lockToken(t, tenant, id);
      cursors[id] = (await sync(t, lockTokens[id]!, id)).cursor;
    }
    // Access-log entries uploaded by the locks: more than one page of the export (1000 a request).
    for (const [id, count] of Object.entries(LOG_ENTRIES)) {
      for (let first = 1; first <= count; first += 500) {
        const entries = [];
        for (let entryNo = first; entryNo < Math.min(first + 500, count + 1); entryNo++) {
          entries.push({ entryNo, lockTime: now - 3_600_000 + entryNo, command: 'open', channel: 'btlespp', result: entryNo % 10 === 0 ? 'denied' : 'granted' });
        }
        const uploaded = await t.app.inject({
          method: 'POST',
          url: `/deviceapi/securedobjects/${id}/accesslog`,
          headers: bearer(lockTokens[id]!),
          payload: { entries },
        });
        expect(uploaded.statusCode, uploaded.body).toBe(200);
      }
    }
    // A webhook subscription to a local receiver, with one delivered event.
    receiver = await startReceiver();
    const hook = await call(t, operator, {
      method: 'POST',
      url: '/operatorapi/webhooks',
      payload: { url: receiver.url, eventTypes: ['ticket.created', 'ticket.revoked'], description: 'Front desk' },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    await ticket(t, operator, 'side', 'phone-bob', { beginDate: now - HOUR, endDate: now + 24 * HOUR });
    await t.app.services.webhookDeliveries.runOnce();

    userDataDir = mkdtempSync(join(tmpdir(), 'acs-console-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [
        '--headless',
        ...offlineChromiumArgs(HOST),
      ],
      viewport: { width: 1280, height: 900 },
      acceptDownloads: true,
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(UI_TIMEOUT);
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    // File choosers are intercepted from now on, not from just before the key that opens one: a subscription made
    // then (page.waitForEvent('filechooser') turns Chromium's interception on) was not always in force when the key
    // arrived, and the bulk import waited its whole deadline for an event that never came.
    page.on('filechooser', (chooser) => onFileChooser(chooser));
    await page.addInitScript(`
      document.addEventListener('securitypolicyviolation', (event) => {
        console.error('CSP ' + event.violatedDirective + ' blocked ' + event.blockedURI + ' at ' + event.sourceFile + ':' + event.lineNumber);
      });
    `);
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await receiver?.close();
    await t?.close();
  });

  /** No axe-core violation of impact serious or critical on the page as it is now. */
  async function expectAccessible(screen: string) {
    const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']).analyze();
    const serious = results.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
    expect(serious, screen).toEqual([]);
  }

  /** Signs in through the console as ada@acme (the sign-in test checks each step), unless the page is signed in. */
  async function ensureSignedIn() {
    if ((await page.getByRole('navigation', { name: 'Screens' }).count()) > 0) return;
    await page.goto(`${origin}/console/?tenant=acme`);
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    await page.waitForURL((url) => url.pathname === '/oauth/authorize');
    await page.getByLabel('User (USER@TENANT)').fill('ada@acme');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Screens' }).waitFor();
  }

  async function openScreen(label: string) {
    await ensureSignedIn();
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  }

  it('serves the console with the strict Content-Security-Policy', async () => {
    const response = await page.goto(`${origin}/console/?tenant=acme`);
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    // Only this origin's resources were requested.
    const html = await response!.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('signs in with the authorization code and PKCE, keeping no token in localStorage', async () => {
    await page.goto(`${origin}/console/?tenant=acme`);
    await page.getByRole('heading', { name: 'Operator console' }).waitFor();
    await expectAccessible('sign-in');
    const authorize = page.waitForURL((url) => url.pathname === '/oauth/authorize');
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    await authorize;
    const query = new URL(page.url()).searchParams;
    expect(query.get('code_challenge_method')).toBe('S256');
    expect(query.get('redirect_uri')).toBe(`${origin}/console/callback`);
    expect(query.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByLabel('User (USER@TENANT)').fill('ada@acme');
    await page.getByLabel('Password').fill(PASSWORD);
    const tokenAnswer = page.waitForResponse((response) => new URL(response.url()).pathname === '/oauth/token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect((await tokenAnswer).status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Doors' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/doors');
    expect(await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }))).toEqual({ local: 0, session: 0 });
    await expect.poll(() => page.getByText('Tenant acme').count(), UNTIL).toBe(1);
  });

  it('doors: who can open the front door now and why, and its health', async () => {
    await openScreen('Doors');
    await page.getByRole('table', { name: 'Doors' }).waitFor();
    await expectAccessible('doors');
    await page.getByRole('link', { name: 'Who can open front' }).click();
    const who = page.getByRole('table', { name: 'Phones that can open front now' });
    await who.waitFor();
    await expect.poll(() => who.textContent(), UNTIL).toContain('Alice Example');
    expect(await who.textContent()).toContain('Bob Example');
    expect(await who.textContent()).toContain('Access permission');
    const health = page.locator('dl.facts');
    expect(await health.textContent()).toContain('Pending revocations0');
    expect(await health.textContent()).toMatch(/Last seen\d{4}-\d\d-\d\d/);
    await expectAccessible('door detail');
    // The README's screenshot: the question the console answers. Taken on every run; written to docs/ only where it is
    // missing or asked for (UPDATE_SCREENSHOTS=1), so a test run leaves the tree as it found it (its times change).
    const screenshot = await page.screenshot({ fullPage: true });
    expect(screenshot.subarray(1, 4).toString('latin1')).toBe('PNG');
    const readmeScreenshot = join(ROOT, 'docs', 'console.png');
    if (!existsSync(readmeScreenshot) || process.env.UPDATE_SCREENSHOTS === '1') writeFileSync(readmeScreenshot, screenshot);
  });

  it('doors: searched and paged by the server, with the keyboard alone', async () => {
    await openScreen('Doors');
    await tabTo(page, 'Door id or name contains');
    await page.keyboard.type('HALL');
    // The search is the server's (GET /operatorapi/securedobjects?search=), one page at a time.
    const searched = page.waitForRequest((request) => {
      const url = new URL(request.url());
      return url.pathname === '/operatorapi/securedobjects' && url.searchParams.get('search') === 'HALL' && url.searchParams.get('limit') === '25';
    });
    await page.keyboard.press('Enter');
    await searched;
    const status = (text: string) => page.getByRole('status').filter({ hasText: text });
    await status('Page 1: 25 doors matching “HALL”, more on the next page.').waitFor();
    const first = page.getByRole('table', { name: 'Doors, page 1' });
    expect(await first.getByRole('row').count()).toBe(26);
    expect(await first.textContent()).toContain('hall-01');
    expect(await first.textContent()).not.toContain('front');
    await expectAccessible('doors, searched');

    await tabTo(page, 'Next page');
    await page.keyboard.press('Enter');
    await status('Page 2: 5 doors matching “HALL”.').waitFor();
    const second = page.getByRole('table', { name: 'Doors, page 2' });
    expect(await second.getByRole('row').count()).toBe(HALLS - 25 + 1);
    expect(await second.textContent()).toContain(`hall-${HALLS}`);
    // The focus stays on the pager; its button says there is no page further.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Next page');
    expect(await page.getByRole('button', { name: 'Next page' }).getAttribute('aria-disabled')).toBe('true');
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Previous page');
    await page.keyboard.press('Enter');
    await status('Page 1: 25 doors matching “HALL”, more on the next page.').waitFor();
    expect(await page.getByRole('button', { name: 'Previous page' }).getAttribute('aria-disabled')).toBe('true');

    // The search is on the id and the Bluetooth name, and one that finds nothing says so.
    await page.getByLabel('Door id or name contains').fill('garden-gate');
    await page.keyboard.press('Enter');
    await status('Page 1: 1 door matching “garden-gate”.').waitFor();
    await page.getByLabel('Door id or name contains').fill('no such door');
    await page.keyboard.press('Enter');
    await status('No door matching “no such door”.').waitFor();
  });

  it('doors: an access\'s schedule on the lock\'s own clock, and the window open now in its time', async () => {
    await openScreen('Doors');
    const answered = page.waitForResponse((response) => new URL(response.url()).pathname === '/operatorapi/securedobjects/garden/access');
    await page.getByRole('link', { name: 'Who can open garden' }).click();
    const access = (await (await answered).json()) as { mobileDeviceId: string; nextWindow?: { start: number; end: number } }[];
    const window = access.find((entry) => entry.mobileDeviceId === 'phone-bob')?.nextWindow;
    expect(window).toBeDefined();
    const who = page.getByRole('table', { name: 'Phones that can open garden now' });
    await expect.poll(() => who.textContent(), UNTIL).toContain('Bob Example');
    const text = await who.textContent();
    expect(text).toContain(`Every day 00:00–00:00 (to the next day) (${GARDEN_ZONE})`);
    expect(text).toContain(`Open now: ${lockTime(window!.start, GARDEN_ZONE)} to ${lockTime(window!.end, GARDEN_ZONE)} lock time`);
    expect(await page.locator('dl.facts').textContent()).toContain(`Time zone${GARDEN_ZONE}`);
    await expectAccessible('door with a schedule');
  });

  it('explain: would Alice\'s phone open the side door now', async () => {
    await openScreen('Explain');
    await page.getByLabel('Phone id').fill('phone-alice');
    await page.getByLabel('Door id').fill('side');
    await page.getByRole('button', { name: 'Explain' }).click();
    await page.getByRole('heading', { name: /It would open at/ }).waitFor();
    expect(await page.getByRole('table', { name: 'Tickets considered' }).textContent()).toContain('allow');
    await expectAccessible('explain');
  });

  it('access log: filters, cursor paging and a CSV export of every page', async () => {
    await openScreen('Access log');
    await page.getByRole('button', { name: 'Show entries' }).click();
    await page.getByRole('status').filter({ hasText: 'Page 1: 100 entries.' }).waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByRole('status').filter({ hasText: 'Page 2: 100 entries.' }).waitFor();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByRole('status').filter({ hasText: 'Page 1: 100 entries.' }).waitFor();
    await expectAccessible('access log');

    const total = LOG_ENTRIES.front + LOG_ENTRIES.side;
    await page.getByRole('button', { name: 'Export all pages as CSV' }).click();
    await page.getByRole('status').filter({ hasText: `Export ready: ${total} rows.` }).waitFor();
    const downloading = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download access-log.csv' }).click();
    const file = await (await downloading).path();
    const lines = readFileSync(file, 'utf8').split('\r\n').filter(Boolean);
    expect(lines[0]).toBe('securedObjectId,entryNo,lockTime,tokenId,mobileDeviceId,command,channel,result,reason,receivedTime,via,signed,clockOffset');
    expect(lines).toHaveLength(total + 1);
    const rows = lines.slice(1).map((line) => line.split(','));
    expect(new Set(rows.map((row) => `${row[0]}#${row[1]}`)).size).toBe(total);
    expect(rows.filter((row) => row[7] === 'denied')).toHaveLength(Math.floor(LOG_ENTRIES.front / 10) + Math.floor(LOG_ENTRIES.side / 10));

    // A filter: the side door's denied entries only.
    await page.getByLabel('Door id').fill('side');
    await page.getByLabel('Result').selectOption('denied');
    await page.getByRole('button', { name: 'Show entries' }).click();
    await page.getByRole('status').filter({ hasText: `Page 1: ${Math.floor(LOG_ENTRIES.side / 10)} entries.` }).waitFor();
  });

  it('claims: create one for Alice with a QR code drawn locally, see its state, revoke it', async () => {
    await openScreen('Claims');
    await page.getByLabel('Resident id').fill(alice.id);
    await page.getByRole('button', { name: 'Create claim' }).click();
    const qr = page.getByRole('img', { name: /QR code of the claim link/ });
    await qr.waitFor();
    expect(await qr.evaluate((element) => element.tagName.toLowerCase())).toBe('svg');
    const claims = page.getByRole('table', { name: 'Claims' });
    await expect.poll(() => claims.textContent(), UNTIL).toContain('created');
    await expectAccessible('claims');
    const id = (await page.getByRole('heading', { name: /^Claim / }).textContent())!.replace('Claim ', '');
    await page.getByRole('button', { name: `Revoke claim ${id}` }).click();
    await page.getByRole('status').filter({ hasText: `Claim ${id} revoked.` }).waitFor();
    const stored = await call(t, acme.operator, { method: 'GET', url: `/operatorapi/claims/${id}` });
    expect(stored.json()).toMatchObject({ id, state: 'revoked' });
  });

  it('events and webhooks: the subscription, its delivery log, a replay', async () => {
    await openScreen('Events and webhooks');
    const hooks = page.getByRole('table', { name: 'Webhook subscriptions' });
    await expect.poll(() => hooks.textContent(), UNTIL).toContain(receiver.url);
    await expect.poll(() => page.getByRole('table', { name: 'Recent events' }).textContent(), UNTIL).toContain('ticket.created');
    await page.getByRole('button', { name: /^Show deliveries of / }).click();
    const attempts = page.getByRole('table', { name: /^Delivery attempts of webhook/ });
    await expect.poll(() => attempts.textContent(), UNTIL).toContain('200');
    await expectAccessible('events and webhooks');
    const before = receiver.received.length;
    await page.getByRole('button', { name: /^Replay event / }).first().click();
    await page.getByRole('status').filter({ hasText: '1 events queued for delivery again.' }).waitFor();
    await t.app.services.webhookDeliveries.runOnce();
    await receiver.waitFor(before + 1);
  });

  it('bulk imports by keyboard alone: upload a CSV file, follow the progress, read each row\'s result', async () => {
    await openScreen('Bulk imports');
    await expectAccessible('bulk imports');
    await tabTo(page, 'What the rows are');
    // The select already shows phones (mobile devices); the file input opens the file chooser with the keyboard.
    await tabTo(page, 'CSV file');
    const chooser = new Promise<FileChooser>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`Space on the file input opened no file chooser within ${UI_TIMEOUT} ms`)), UI_TIMEOUT);
      onFileChooser = (opened) => {
        clearTimeout(deadline);
        resolve(opened);
      };
    });
    await page.keyboard.press('Space');
    await (await chooser).setFiles({
      name: 'phones.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('id,name\r\nphone-imported-1,First imported\r\nphone-imported-2,Second imported\r\nnot a valid id!,Bad id\r\n'),
    });
    await tabTo(page, 'Import');
    await page.keyboard.press('Enter');
    // The condition: the job's end, as the status names it. A job with a failed item ends `failed` (docs/api-reference.md
    // 14), its good rows applied all the same. The results table follows the status (the screen reads them then).
    await page.getByRole('status').filter({ hasText: /^Job \S+ failed: 3 of 3 processed, 2 succeeded, 1 failed\.$/ }).waitFor();
    const results = page.getByRole('table', { name: 'Results per row' });
    await expect.poll(() => results.textContent(), UNTIL).toContain('phone-imported-2');
    expect(await results.textContent()).toContain('failed');
    const phone = await call(t, acme.operator, { method: 'GET', url: '/operatorapi/mobiledevices/phone-imported-1' });
    expect(phone.json()).toMatchObject({ id: 'phone-imported-1', name: 'First imported' });
    await expectAccessible('bulk imports, finished');
  });

  it('people: revoke Alice everywhere by keyboard alone, the live count reaching "applied" as the locks sync', async () => {
    await openScreen('People');
    await page.getByRole('table', { name: 'Residents' }).waitFor();
    await expectAccessible('people');
    await tabTo(page, 'Open Alice Example');
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Phones' }).waitFor();
    expect(await page.getByRole('table', { name: 'Phones' }).textContent()).toContain('No key registered');
    expect(await page.getByRole('table', { name: 'Access permissions' }).textContent()).toContain('2');
    await expectAccessible('resident');
    await tabTo(page, 'Revoke Alice Example everywhere…');
    await page.keyboard.press('Enter');
    // The confirmation takes the focus: Enter confirms.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent), UNTIL).toBe('Yes, revoke everywhere');
    await expectAccessible('revoke confirmation');
    await page.keyboard.press('Enter');
    const progress = page.getByTestId('revocation-progress');
    await expect.poll(() => progress.textContent(), UNTIL).toBe('2 tickets revoked. Doors applied: 0, pending: 2.');
    // The front door syncs: it receives the revocation, then acknowledges it with its next sync.
    const front = await sync(t, lockTokens.front!, 'front', cursors.front);
    await sync(t, lockTokens.front!, 'front', front.cursor);
    await expect.poll(() => progress.textContent(), UNTIL).toBe('2 tickets revoked. Doors applied: 1, pending: 1.');
    const side = await sync(t, lockTokens.side!, 'side', cursors.side);
    await sync(t, lockTokens.side!, 'side', side.cursor);
    await expect.poll(() => progress.textContent(), UNTIL).toBe('2 tickets revoked. All 2 doors applied.');
    const pending = await call(t, acme.operator, { method: 'GET', url: `/operatorapi/revocations?applied=false&residentId=${alice.id}` });
    expect(pending.json()).toEqual([]);
    await expectAccessible('revoked');
  });

  it('the doors screen no longer lists Alice for the front door, and nothing broke the policy on the way', async () => {
    await openScreen('Doors');
    await page.getByRole('link', { name: 'Who can open front' }).click();
    const who = page.getByRole('table', { name: 'Phones that can open front now' });
    await expect.poll(() => who.textContent(), UNTIL).toContain('Bob Example');
    expect(await who.textContent()).not.toContain('Alice Example');
    expect(pageErrors).toEqual([]);
  });
});
