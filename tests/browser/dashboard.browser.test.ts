/**
 * The dashboard end to end in a real browser (Debian's Chromium via playwright-core) against the
 * real ledger, admin and proxy: people accept invitations and sign in, create and rotate keys,
 * watch a completion made with the official `openai` client arrive without a reload, set a budget
 * whose alert fires, export usage, and are kept out of what their role or organisation does not
 * allow. Money is asserted to the paisa on screen and to the micro-rupee through the API.
 * Elements are found by ARIA role and accessible name, as a screen reader would.
 * One browser for the file, one context per person. Screenshots: tests/browser/support/screenshots.ts.
 */
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { asSignedInPerson, startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { expectedRupees } from './support/rupees.ts';
import { openScreenshotAlbum, type ScreenshotAlbum } from './support/screenshots.ts';
import { statFigure, uiTimeout, waitForExactText, waitForValue } from './support/page-waits.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

/** Prices of the dashboard's model, µ₹ per million tokens: high enough that one completion moves the balance by paise. */
const prices = { input: 1_000_000_003n, output: 2_000_000_007n };
/** ₹12,34,567.89: large enough that the Indian grouping shows. */
const openingCreditMicros = 1_234_567_890_000n;
const password = 'correct horse battery staple';

/** The people of the test, each with their own browser context. */
const people = {
  owner: { email: 'asha.owner@example.test', name: 'Asha Rao' },
  viewer: { email: 'vikram.viewer@example.test', name: 'Vikram Shah' },
  outsider: { email: 'ravi.outsider@example.test', name: 'Ravi Iyer' },
  platform: { email: 'priya.platform@example.test', name: 'Priya Nair' },
} as const;


describe.skipIf(!serverUrl || browserMissing !== undefined)('the dashboard in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  let album: ScreenshotAlbum;
  let organisationId = '';
  const modelSlug = 'dash-chat';
  const contexts: BrowserContext[] = [];
  let ownerPage: Page;
  let projectId = '';
  let apiKey = '';
  let webhookSecret = '';
  /** Completions made with the Checkout project's keys (the usage export must list them all). */
  let checkoutCompletions = 0;

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);
  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: stack.gateway.proxyBases[0]!, maxRetries: 0 });
  const complete = async (key: string) => {
    const completion = await client(key).chat.completions.create({
      model: modelSlug, messages: [{ role: 'user', content: 'Hello from the dashboard test [[fake:reply_words=5]]' }],
    });
    checkoutCompletions++;
    return completion;
  };

  /** A new person's browser context at 1280 × 900 px, in India's time zone. */
  async function newPersonContext(width = 1280, height = 900): Promise<BrowserContext> {
    const context = await browser.newContext({
      baseURL: stack.origin, viewport: { width, height }, timezoneId: 'Asia/Kolkata', locale: 'en-IN', reducedMotion: 'reduce',
    });
    // A step that cannot happen fails after uiTimeout with what it waited for, not at the test's timeout.
    context.setDefaultTimeout(uiTimeout);
    contexts.push(context);
    return context;
  }

  /** Opens an invitation (or setup) link, sets name and password, and waits until signed in. */
  async function acceptLink(page: Page, link: string, name: string) {
    await page.goto(link);
    await page.getByLabel(/your name/i).fill(name);
    await page.getByLabel(/^new password$/i).fill(password);
    await page.getByLabel(/^repeat the password$/i).fill(password);
    await page.getByRole('button', { name: /save and sign in/i }).click();
    await signedInShell(page);
  }

  /** Waits for the signed-in shell: its main navigation. */
  async function signedInShell(page: Page) {
    await page.getByRole('navigation', { name: /main/i }).waitFor({ timeout: uiTimeout });
  }

  /** Follows the main navigation to a page and waits for its heading (by default named as the link). */
  async function openPage(page: Page, name: RegExp, heading = name) {
    await page.getByRole('navigation', { name: /main/i }).getByRole('link', { name }).click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor({ timeout: uiTimeout });
  }

  /**
   * The API key the page shows once (the SecretOnce group "API key"), as its copy button puts it
   * on the clipboard; checked against the text shown beside it.
   */
  async function copiedApiKey(page: Page, previous?: string): Promise<string> {
    const secretOnce = page.getByRole('group', { name: 'API key' });
    const shown = secretOnce.getByRole('textbox');
    await waitForValue(async () => {
      const value = await shown.inputValue({ timeout: 1000 }).catch(() => '');
      return value.startsWith('gwsk_') && value !== previous ? value : undefined;
    });
    await secretOnce.getByRole('button', { name: /copy/i }).click();
    await secretOnce.getByText('Copied').waitFor({ timeout: uiTimeout });
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toBe(await shown.inputValue());
    return copied;
  }

  /** Waits until the overview's charts include the Checkout project's usage (their text alternative names it). */
  async function chartsShowUsage(page: Page) {
    await page.getByRole('img', { name: /^Cost by project.*Checkout ₹/ }).waitFor();
  }

  beforeAll(async () => {
    [stack, browser, album] = await Promise.all([startDashboardStack(serverUrl!), launchChromium(), openScreenshotAlbum()]);
    await admin('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Dashboard Chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: prices.input.toString(), output_price_micros_per_mtok: prices.output.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, model: 'upstream-dash-model', api_key: stack.gateway.upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'Asha Traders', rpm_limit: 600, allowed_gateway_models: [modelSlug] });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: openingCreditMicros.toString(), reason: 'opening credit' }, { 'idempotency-key': 'dash-opening' });
    const webhook = await admin('PUT', `/organisations/${organisationId}/webhook`, { url: stack.webhook.url, format: 'json' });
    webhookSecret = webhook.signing_secret as string;
  }, 90_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('1. a person accepts an invitation made through the API, signs out and signs in again', async () => {
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: people.owner.email, role: 'owner' });
    expect(invitation.link).toMatch(new RegExp(`^${stack.origin}/#/link/`));
    const ownerContext = await newPersonContext();
    await ownerContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.origin });
    ownerPage = await ownerContext.newPage();
    await acceptLink(ownerPage, invitation.link as string, people.owner.name);

    await ownerPage.getByRole('button', { name: 'Sign out', exact: true }).click();
    await ownerPage.getByLabel(/email/i).fill(people.owner.email);
    await ownerPage.getByLabel(/password/i).fill('not the password at all');
    await ownerPage.getByRole('button', { name: /sign in/i }).click();
    await ownerPage.getByText('Email or password is wrong.').waitFor({ timeout: uiTimeout });
    await ownerPage.getByLabel(/password/i).fill(password);
    await ownerPage.getByRole('button', { name: /sign in/i }).click();
    await signedInShell(ownerPage);

    const me = await asSignedInPerson(ownerPage.context().request, stack.origin);
    const person = await (await me.get('/me')).json() as Record<string, any>;
    expect(person).toMatchObject({ email: people.owner.email, memberships: [{ organisation_id: organisationId, role: 'owner' }] });
  });

  it('2. creates a project, copies its key, and sees a completion made with it arrive on the overview without a reload', async () => {
    await openPage(ownerPage, /^projects$/i);
    await ownerPage.getByLabel(/project name/i).fill('Checkout');
    await ownerPage.getByRole('button', { name: /create project/i }).click();
    apiKey = await copiedApiKey(ownerPage);
    const projects = await admin('GET', `/organisations/${organisationId}/projects`);
    const project = (projects.data as Array<Record<string, any>>).find((p) => p.name === 'Checkout')!;
    projectId = project.id as string;
    expect(apiKey.endsWith((project.api_key.hint as string).split('…')[1]!)).toBe(true);
    await album.take(ownerPage, 'projects', [ownerPage.getByRole('group', { name: 'API key' }).getByRole('textbox')]);

    await openPage(ownerPage, /^overview$/i);
    await waitForExactText(statFigure(ownerPage, 'Available'), expectedRupees(openingCreditMicros));
    // Browser-side expressions are strings: the tests project has Node's types, not the DOM's.
    await ownerPage.evaluate('window.notReloaded = true');

    const completion = await complete(apiKey);
    const usage = completion.usage!;
    const side = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n;
    const costMicros = side(usage.prompt_tokens, prices.input) + side(usage.completion_tokens, prices.output);
    const balance = await stack.gateway.settledBalance(organisationId);
    expect(BigInt(balance.available_micros as string)).toBe(openingCreditMicros - costMicros);
    expect(BigInt(balance.debited_micros as string)).toBe(costMicros);

    const recent = ownerPage.getByRole('table', { name: /recent requests/i });
    await recent.getByRole('row').filter({ hasText: 'Checkout' }).filter({ hasText: modelSlug }).first().waitFor({ timeout: uiTimeout });
    await waitForExactText(statFigure(ownerPage, 'Available'), expectedRupees(balance.available_micros as string));
    await waitForExactText(statFigure(ownerPage, 'Debited'), expectedRupees(balance.debited_micros as string));
    expect(await ownerPage.evaluate<boolean | undefined>('window.notReloaded')).toBe(true);
    await chartsShowUsage(ownerPage);
    await album.take(ownerPage, 'overview');
  });

  it('3. rotates the key: the old key gets 401 through the openai client, the new one works', async () => {
    await openPage(ownerPage, /^projects$/i);
    await ownerPage.getByRole('row').filter({ hasText: 'Checkout' }).getByRole('button', { name: /rotate/i }).click();
    await ownerPage.getByRole('dialog').getByRole('button', { name: /rotate/i }).click();
    const newKey = await copiedApiKey(ownerPage, apiKey);
    await ownerPage.getByText(/old key stopped working/i).waitFor({ timeout: uiTimeout });
    expect(newKey).not.toBe(apiKey);

    const refused = await complete(apiKey).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    const served = await complete(newKey);
    expect(served.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5');
    apiKey = newKey;
  });

  it('4. sets a budget whose soft alert has already been reached and sees the alert', async () => {
    await stack.gateway.settledBalance(organisationId); // spend counts holds too: read it once the last completion settled
    const spent = await admin('GET', `/projects/${projectId}/budget`);
    expect(BigInt(spent.spent_micros as string)).toBeGreaterThan(10_000n); // > ₹0.01, i.e. 1 % of the ₹1 cap below
    const row = ownerPage.getByRole('row').filter({ hasText: 'Checkout' });
    await row.getByRole('button', { name: /budget/i }).click();
    const dialog = ownerPage.getByRole('dialog');
    await dialog.getByLabel(/monthly (cap|budget)/i).fill('1.00');
    await dialog.getByLabel(/soft alert/i).fill('1');
    await dialog.getByRole('button', { name: /save budget/i }).click();
    await dialog.waitFor({ state: 'hidden', timeout: uiTimeout });

    const budget = await admin('GET', `/projects/${projectId}/budget`);
    expect(budget).toMatchObject({ monthly_cap_micros: '1000000', soft_alert_percent: 1, soft_alert_raised: true });

    const alert = await waitForValue(async () => {
      const list = await admin('GET', `/organisations/${organisationId}/alerts`);
      return (list.data as Array<Record<string, any>>).find((item) => item.kind === 'budget_soft' && item.project_id === projectId);
    });
    expect(alert.organisation_id).toBe(organisationId);
    expect(alert.details).toMatchObject({ spent_micros: spent.spent_micros, monthly_cap_micros: '1000000', soft_alert_percent: 1 });
    expect(alert.message).toContain(expectedRupees(spent.spent_micros as string));
    // The banner came live (no reload), then the alerts page lists it.
    await ownerPage.getByRole('alert').filter({ hasText: alert.message as string }).first().waitFor({ timeout: uiTimeout });
    await openPage(ownerPage, /^alerts$/i);
    await ownerPage.getByRole('table', { name: /alerts/i }).getByRole('row').filter({ hasText: alert.message as string }).waitFor({ timeout: uiTimeout });

    // The webhook got the same alert, signed with the secret shown when it was configured.
    const delivery = await waitForValue(async () => stack.webhook.received.find((hook) => hook.body.includes(alert.id as string)));
    const signature = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery.headers['x-gateway-signature']))!;
    expect(signature).not.toBeNull();
    expect(createHmac('sha256', webhookSecret).update(`${signature[1]}.${delivery.body}`).digest('hex')).toBe(signature[2]);
    expect(JSON.parse(delivery.body)).toMatchObject({ id: alert.id, organisation_id: organisationId });
    await album.take(ownerPage, 'alerts');
  });

  it('5. a viewer finds no rotate button, and the API refuses the viewer\'s rotation with 403', async () => {
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: people.viewer.email, role: 'viewer' });
    const viewerPage = await (await newPersonContext()).newPage();
    await acceptLink(viewerPage, invitation.link as string, people.viewer.name);
    await openPage(viewerPage, /^projects$/i);
    const row = viewerPage.getByRole('row').filter({ hasText: 'Checkout' });
    await row.waitFor({ timeout: uiTimeout });
    expect(await viewerPage.getByRole('button', { name: /rotate/i }).count()).toBe(0);

    const viewer = await asSignedInPerson(viewerPage.context().request, stack.origin);
    const refused = await viewer.send('POST', `/projects/${projectId}/api-key-rotations`);
    expect(refused.status()).toBe(403);
    expect((await refused.json() as { error: { code: string } }).error.code).toBe('permission_denied');
    const served = await complete(apiKey);
    expect(served.choices).toHaveLength(1);
  });

  it('6. a person of another organisation opening the first organisation\'s URL gets the not-found page, and the API answers 404', async () => {
    const invitation = await admin('POST', `/organisations/${stack.gateway.organisationId}/invitations`, { email: people.outsider.email, role: 'owner' });
    const outsiderPage = await (await newPersonContext()).newPage();
    await acceptLink(outsiderPage, invitation.link as string, people.outsider.name);

    // The same link shows the owner the project, and the outsider the not-found page.
    const link = `/#/projects?organisation=${organisationId}`;
    await ownerPage.goto(link);
    await ownerPage.getByRole('table', { name: 'Projects' }).getByRole('row').filter({ hasText: 'Checkout' }).waitFor({ timeout: uiTimeout });
    await outsiderPage.goto(link);
    await outsiderPage.getByRole('heading', { level: 1, name: /not found/i }).waitFor({ timeout: uiTimeout });
    expect(await outsiderPage.getByText('Checkout').count()).toBe(0);

    const outsider = await asSignedInPerson(outsiderPage.context().request, stack.origin);
    for (const path of [`/organisations/${organisationId}`, `/organisations/${organisationId}/projects`, `/projects/${projectId}`]) {
      const answer = await outsider.get(path);
      expect(answer.status(), path).toBe(404);
    }
    expect((await outsider.send('POST', `/projects/${projectId}/api-key-rotations`)).status()).toBe(404);
  });

  it('7. the CSV export downloaded in the browser matches the API\'s usage listing for the same filters', async () => {
    await stack.gateway.settledBalance(organisationId); // a usage record exists once its completion settled
    await openPage(ownerPage, /^usage$/i);
    await ownerPage.getByLabel(/^project$/i).selectOption({ label: 'Checkout' });
    await ownerPage.getByRole('button', { name: /apply filters/i }).click();
    const listing = ownerPage.getByRole('table', { name: /matching the filters/i });
    await listing.getByRole('row').filter({ hasText: modelSlug }).nth(checkoutCompletions - 1).waitFor({ timeout: uiTimeout });
    await album.take(ownerPage, 'usage');
    const [download] = await Promise.all([ownerPage.waitForEvent('download'), ownerPage.getByRole('button', { name: /export filtered usage/i }).click()]);
    const rows = parseCsv(await readFile(await download.path(), 'utf8'), { columns: true }) as Array<Record<string, string>>;

    const listed = await stack.allUsage(organisationId, { project_id: projectId });
    expect(listed.length).toBe(checkoutCompletions);
    expect(rows.map((row) => [row.request_id, row.cost_micros, row.debited_micros]))
      .toEqual(listed.map((record) => [record.request_id, record.cost_micros, record.debited_micros]));
  });

  it('8. works 390 px wide without horizontal scrolling, and by keyboard', async () => {
    const narrowContext = await newPersonContext(390, 844);
    await narrowContext.addCookies(await ownerPage.context().cookies());
    const narrow = await narrowContext.newPage();
    await narrow.goto('/');
    await signedInShell(narrow);
    const balance = await stack.gateway.settledBalance(organisationId);
    await waitForExactText(statFigure(narrow, 'Available'), expectedRupees(balance.available_micros as string));
    await chartsShowUsage(narrow);
    expect(await narrow.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await album.take(narrow, 'overview-mobile');

    // From the top of the sign-in page, Tab reaches email, password and the submit button in that
    // order, each with a visible focus indicator; the person types as focus arrives.
    const keyboard = await (await newPersonContext()).newPage();
    await keyboard.goto('/');
    await keyboard.getByRole('button', { name: /sign in/i }).waitFor({ timeout: uiTimeout });
    const reached: Array<{ kind: string; focusVisible: boolean }> = [];
    for (let presses = 0; presses < 20 && reached.at(-1)?.kind !== 'submit'; presses++) {
      await keyboard.keyboard.press('Tab');
      const focused = await keyboard.evaluate<{ kind: string; focusVisible: boolean }>(`(() => {
        const element = document.activeElement;
        const style = getComputedStyle(element);
        const kind = element instanceof HTMLInputElement || element instanceof HTMLButtonElement ? element.type : element.tagName.toLowerCase();
        return { kind, focusVisible: element.matches(':focus-visible') && (style.outlineStyle !== 'none' || style.boxShadow !== 'none') };
      })()`);
      reached.push(focused);
      if (focused.kind === 'email') await keyboard.keyboard.type(people.owner.email);
      if (focused.kind === 'password') await keyboard.keyboard.type(password);
    }
    const formControls = reached.filter((focused) => ['email', 'password', 'submit'].includes(focused.kind));
    expect(formControls).toEqual([{ kind: 'email', focusVisible: true }, { kind: 'password', focusVisible: true }, { kind: 'submit', focusVisible: true }]);
    await keyboard.keyboard.press('Enter');
    await signedInShell(keyboard);
  });

  it('9. the owner turns storing responses off on the overview (the proxy then refuses store: true, naming store), then back on for 2 days', async () => {
    await openPage(ownerPage, /^overview$/i);
    await ownerPage.getByRole('heading', { name: 'Stored responses' }).waitFor();
    await ownerPage.getByLabel('Store responses').uncheck();
    await ownerPage.getByRole('button', { name: /save storage settings/i }).click();
    await ownerPage.getByText(/answers are not stored/).waitFor();
    expect(await admin('GET', `/organisations/${organisationId}`)).toMatchObject({ store_responses: false, response_retention_s: null });
    // The PUT returned once every proxy acknowledged it, so the proxy already refuses.
    const refused = await client(apiKey).responses.create({ model: modelSlug, input: 'Keep this', store: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'store' });

    await ownerPage.getByLabel('Store responses').check();
    await ownerPage.getByLabel(/keep for/i).fill('2');
    await ownerPage.getByRole('button', { name: /save storage settings/i }).click();
    await ownerPage.getByText(/stored \(encrypted for this organisation\) for 2 day/).waitFor();
    expect(await admin('GET', `/organisations/${organisationId}`)).toMatchObject({ store_responses: true, response_retention_s: 172_800 });
  });

  it('shows the members, platform and analytics pages (screenshots)', async () => {
    await openPage(ownerPage, /^members$/i);
    const members = ownerPage.getByRole('table', { name: 'Members' });
    for (const person of [people.owner, people.viewer]) await members.getByRole('row').filter({ hasText: person.email }).waitFor({ timeout: uiTimeout });
    await album.take(ownerPage, 'members');

    const created = await admin('POST', '/people', { email: people.platform.email, platform_admin: true });
    const platformPage = await (await newPersonContext()).newPage();
    await acceptLink(platformPage, created.link as string, people.platform.name);
    await openPage(platformPage, /^platform$/i, /^platform · organisations$/i);
    await platformPage.getByRole('table', { name: 'Organisations' }).getByRole('row').filter({ hasText: 'Asha Traders' }).waitFor({ timeout: uiTimeout });
    await album.take(platformPage, 'platform');

    // An organisation created on the platform page is in the header's switcher at once, without a reload.
    await platformPage.getByRole('button', { name: 'New organisation' }).click();
    const dialog = platformPage.getByRole('dialog');
    await dialog.getByLabel('Name').fill('Nair Logistics');
    await dialog.getByRole('button', { name: 'Create organisation' }).click();
    await platformPage.locator('#organisation-switcher').getByRole('option', { name: 'Nair Logistics' }).waitFor({ state: 'attached', timeout: uiTimeout });
    const listed = await admin('GET', '/organisations?limit=100');
    expect((listed.data as Array<{ name: string; billing_mode: string }>).filter((organisation) => organisation.name === 'Nair Logistics'))
      .toEqual([expect.objectContaining({ billing_mode: 'commercial' })]);

    // Every request of the run was commercial usage of Asha Traders: the margin report's customer price is their sum.
    const customerPrice = (await stack.allUsage(organisationId)).reduce((sum, record) => sum + BigInt(record.cost_micros as string), 0n);
    await openPage(platformPage, /^analytics$/i);
    await waitForExactText(statFigure(platformPage, 'Customer price'), expectedRupees(customerPrice));
    await album.take(platformPage, 'analytics');
  });
});
