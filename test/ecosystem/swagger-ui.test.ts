// Swagger UI tried in a real browser: each API's UI, opened in Debian's chromium, renders every operation of the
// document it loads, gets a token through its own Authorize dialog from our token endpoint, and runs "Try it out"
// on a read endpoint with that token.
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { ACCESS_API_SCOPES } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, createTenant, createUser, passwordGrant, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { device, lock, ticket } from '../helpers/operator.js';
import { CHROMIUM_PATH, chromiumMissing as missingChromium, offlineChromiumArgs } from '../helpers/chromium.js';

const chromiumMissing = missingChromium('Swagger UI browser test');

/**
 * The UI is opened at this name, not at 127.0.0.1: a browser treats loopback as secure and exempts it from rules a
 * real deployment meets (a plain-HTTP `upgrade-insecure-requests` once blanked the UI everywhere but on loopback).
 */
const DOCS_HOST = 'swagger-ui.test';

const CHROMIUM_ARGS = offlineChromiumArgs(DOCS_HOST);

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PASSWORD = 'correct horse battery staple';
/** Rendering, the token round trip and a live request each wait at most this long. */
const UI_TIMEOUT = 30_000;

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: { bearer: { flows: Record<string, { tokenUrl: string }> } } };
}

/** `METHOD /path` of every operation in the document, sorted. */
function operationsOf(document: OpenApiDocument): string[] {
  return Object.entries(document.paths)
    .flatMap(([path, item]) => Object.keys(item).filter((key) => HTTP_METHODS.includes(key)).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

/** `METHOD /path` of every operation block Swagger UI rendered, sorted. */
async function renderedOperations(page: Page): Promise<string[]> {
  const operations = await page.locator('.opblock').evaluateAll((blocks) =>
    blocks.map((block) => {
      const method = block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '?';
      // A deprecated operation's path has the class opblock-summary-path__deprecated instead.
      const path = block.querySelector('.opblock-summary [data-path]')?.getAttribute('data-path') ?? '?';
      return `${method.toUpperCase()} ${path}`;
    }),
  );
  return operations.sort();
}

describe.skipIf(chromiumMissing !== null)('Swagger UI in chromium', () => {
  let t: TestApp;
  let origin: string;
  let browser: Browser;
  let tenant: TenantFixture;
  let operatorToken: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://${DOCS_HOST}:${(t.app.server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
    tenant = await createTenant(t.app, 'swagger');
    operatorToken = await clientToken(t.app, tenant);
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await t?.close();
  });

  /**
   * Opens the UI at `entry` in a fresh browser context, and checks that it rendered exactly the operations of the
   * document it loaded, without a resolver error and without a console error (a CSP violation shows up there).
   * Screenshots the page to /tmp when the test fails.
   */
  async function openUi(context: TestContext, entry: string, documentPath: string): Promise<{ page: Page; document: OpenApiDocument }> {
    const browserContext = await browser.newContext({ baseURL: origin });
    contexts.push(browserContext);
    const page = await browserContext.newPage();
    page.setDefaultTimeout(UI_TIMEOUT);
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    // Chromium's own CSP message does not say which script and line inserted the blocked code; this does.
    await page.addInitScript(`
      document.addEventListener('securitypolicyviolation', (event) => {
        const where = event.target instanceof Element ? event.target.outerHTML.slice(0, 300) : String(event.target);
        console.error('CSP ' + event.violatedDirective + ' blocked ' + event.blockedURI + ' (' + event.sample + ') at ' +
          event.sourceFile + ':' + event.lineNumber + ':' + event.columnNumber + ' on ' + where);
      });
    `);
    context.onTestFailed(async () => {
      const file = `/tmp/swagger-ui-${entry.replace(/[^a-z0-9]+/gi, '-')}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      // eslint-disable-next-line no-console -- where the screenshot is, next to the failure.
      console.warn(`Swagger UI screenshot: ${file}; console errors: ${JSON.stringify(consoleErrors)}`);
    });

    const documentLoaded = page.waitForResponse((response) => new URL(response.url()).pathname === documentPath);
    const navigation = await page.goto(entry);
    expect(navigation?.status(), entry).toBe(200);
    const documentResponse = await documentLoaded;
    expect(documentResponse.status(), documentPath).toBe(200);
    const document = (await documentResponse.json()) as OpenApiDocument;

    const expected = operationsOf(document);
    expect(expected.length).toBeGreaterThan(0);
    await page.locator('.opblock').first().waitFor();
    await expect.poll(() => renderedOperations(page), { timeout: UI_TIMEOUT }).toEqual(expected);
    expect(await page.locator('.errors-wrapper').count(), 'Swagger UI reports errors in the document').toBe(0);
    expect(consoleErrors).toEqual([]);
    return { page, document };
  }

  /**
   * Fills the Authorize dialog, submits it and answers the access token Swagger UI received from our token
   * endpoint (the tokenUrl of the document's oauth2 flow).
   */
  async function authorize(
    page: Page,
    document: OpenApiDocument,
    /** Input values by the dialog's `data-name` (clientId, clientSecret, username, password). */
    inputs: Record<string, string>,
    /** Select values by `data-name` (passwordType: basic or request-body). */
    selects: Record<string, string> = {},
  ): Promise<string> {
    const [flow] = Object.values(document.components.securitySchemes.bearer.flows);
    const tokenPath = new URL(flow!.tokenUrl, origin).pathname;
    await page.locator('.auth-wrapper .btn.authorize').click();
    const dialog = page.locator('.modal-ux');
    for (const [name, value] of Object.entries(selects)) await dialog.locator(`select[data-name="${name}"]`).selectOption(value);
    for (const [name, value] of Object.entries(inputs)) await dialog.locator(`input[data-name="${name}"]`).fill(value);

    const tokenResponse = page.waitForResponse((response) => new URL(response.url()).pathname === tokenPath && response.request().method() === 'POST');
    await dialog.locator('.auth-btn-wrapper button', { hasText: 'Authorize' }).click();
    const response = await tokenResponse;
    expect(response.status(), `${tokenPath}: ${await response.text()}`).toBe(200);
    const { access_token: accessToken } = (await response.json()) as { access_token: string };
    // The dialog turns to "Logout" once Swagger UI stored the token.
    await dialog.locator('.auth-btn-wrapper button', { hasText: 'Logout' }).waitFor();
    await dialog.locator('.close-modal').click();
    return accessToken;
  }

  /**
   * Expands `METHOD path`, clicks "Try it out", fills the path parameters, executes, and answers the Authorization
   * header the browser sent, the status Swagger UI shows and the response body it shows.
   */
  async function tryItOut(page: Page, method: string, path: string, parameters: Record<string, string> = {}) {
    const block = page.locator(`.opblock-${method}`).filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
    await block.locator('.opblock-summary').click();
    await block.locator('.try-out__btn').click();
    for (const [name, value] of Object.entries(parameters)) {
      await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
    }
    let requestPath = path;
    for (const [name, value] of Object.entries(parameters)) requestPath = requestPath.replace(`{${name}}`, encodeURIComponent(value));

    const apiRequest = page.waitForRequest((request) => request.method() === method.toUpperCase() && new URL(request.url()).pathname === requestPath);
    await block.locator('.btn.execute').click();
    const request = await apiRequest;
    const liveResponse = block.locator('.live-responses-table .response');
    await liveResponse.locator('.response-col_status').waitFor();
    return {
      authorization: await request.headerValue('authorization'),
      status: (await liveResponse.locator('.response-col_status').textContent())?.trim(),
      body: await liveResponse.locator('.response-col_description').textContent(),
    };
  }

  it('Operator API: every operation renders; Authorize (client credentials) gets a token; GET /operatorapi/tickets answers 200', async (context) => {
    await lock(t, operatorToken, 'swagger-door');
    await device(t, operatorToken, 'swagger-phone');
    const issued = await ticket(t, operatorToken, 'swagger-door', 'swagger-phone');

    const { page, document } = await openUi(context, '/operatorapi/apidocs/index.html', '/operatorapi/apidocs/json');
    // Each API's UI links the OAuth document, where its tokens come from.
    await expect.poll(() => page.locator('.info a[href="/oauth/apidocs/"]').count(), { timeout: UI_TIMEOUT }).toBe(1);
    // Swagger UI sends a client credentials grant's client id and secret by HTTP Basic (client_secret_basic).
    const accessToken = await authorize(page, document, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
    const result = await tryItOut(page, 'get', '/operatorapi/tickets');
    expect(result.authorization).toBe(`Bearer ${accessToken}`);
    expect(result.status).toBe('200');
    expect(result.body).toContain(issued.id);
  });

  it('Access API: every operation renders; Authorize (password, client in the body) gets a token; GET /v1/residents answers 200', async (context) => {
    const client = await createClient(t.app, tenant, ACCESS_API_SCOPES);
    await createUser(t.app, tenant, 'swagger-manager', PASSWORD);
    const login = `swagger-manager@${tenant.name}`;
    const grant = await passwordGrant(t.app, client, login, PASSWORD);
    expect(grant.statusCode, grant.body).toBe(200);
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/residents',
      headers: bearer(grant.json().access_token as string),
      payload: { name: 'Swagger Resident' },
    });
    expect(created.statusCode, created.body).toBe(201);

    const { page, document } = await openUi(context, '/v1/swagger-ui', '/v1/swagger-ui/json');
    // "Request body" sends client_id and client_secret in the form (client_secret_post), the other method the server takes.
    const accessToken = await authorize(
      page,
      document,
      { username: login, password: PASSWORD, clientId: client.clientId, clientSecret: client.clientSecret },
      { passwordType: 'request-body' },
    );
    const result = await tryItOut(page, 'get', '/v1/residents');
    expect(result.authorization).toBe(`Bearer ${accessToken}`);
    expect(result.status).toBe('200');
    expect(result.body).toContain('Swagger Resident');
  });

  it('Device API: every operation renders; Authorize (a phone-bound client) gets a token; the phone download answers 200', async (context) => {
    await lock(t, operatorToken, 'swagger-door-2');
    await device(t, operatorToken, 'swagger-phone-2');
    const issued = await ticket(t, operatorToken, 'swagger-door-2', 'swagger-phone-2');
    const phone: ClientFixture = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'swagger-phone-2' });

    const { page, document } = await openUi(context, '/deviceapi/apidocs/index.html', '/deviceapi/apidocs/json');
    const accessToken = await authorize(page, document, { clientId: phone.clientId, clientSecret: phone.clientSecret });
    const result = await tryItOut(page, 'get', '/deviceapi/mobiledevices/{id}/tickets', { id: 'swagger-phone-2' });
    expect(result.authorization).toBe(`Bearer ${accessToken}`);
    expect(result.status).toBe('200');
    expect(result.body).toContain(issued.id);
  });
  it('OAuth: every operation renders, the token form shows its fields and grants; metadata and a tenant key set answer 200', async (context) => {
    const { page } = await openUi(context, '/oauth/apidocs/index.html', '/oauth/apidocs/json');
    // The token endpoint's form: its fields, the three grants and the USER@TENANT user name, as a reader sees them.
    const token = page.locator('.opblock-post').filter({ has: page.locator('.opblock-summary-path[data-path="/oauth/token"]') });
    await token.locator('.opblock-summary').click();
    const form = token.locator('.opblock-section-request-body');
    await form.waitFor();
    for (const text of ['grant_type', 'client_credentials', 'refresh_token', 'username', 'USER@TENANT', 'client_secret', 'scope']) {
      await expect.poll(() => form.textContent(), { timeout: UI_TIMEOUT }).toContain(text);
    }
    const errors = token.locator('.responses-table');
    for (const status of ['200', '400', '401', '429']) await expect.poll(() => errors.textContent(), { timeout: UI_TIMEOUT }).toContain(status);
    await expect.poll(() => errors.textContent(), { timeout: UI_TIMEOUT }).toContain('invalid_client');

    const metadata = await tryItOut(page, 'get', '/.well-known/oauth-authorization-server');
    expect(metadata.authorization).toBeNull();
    expect(metadata.status).toBe('200');
    expect(metadata.body).toContain('token_endpoint');
    const keys = await tryItOut(page, 'get', '/tenants/{tenant}/jwks.json', { tenant: tenant.name });
    expect(keys.status).toBe('200');
    expect(keys.body).toContain('"kid"');
  });
});
