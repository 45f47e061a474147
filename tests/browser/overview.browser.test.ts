/**
 * The Overview in a real browser against the real ledger, admin and proxy (issue 28): requests
 * costing a few µ₹ each (made with the official `openai` client) show exactly, to the µ₹, as the
 * API has them — Debited, each recent request's cost, the budget alert, the cost chart's axis —
 * and one live update costs the page the same small number of admin requests with 2 projects as
 * with 40 (one overview read, not one budget read per project). The date range lives in the URL.
 * Elements are found by ARIA role and accessible name.
 */
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { expectedRupees } from './support/rupees.ts';
import { statFigure, uiTimeout, waitForExactText, waitForValue } from './support/page-waits.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

/** µ₹ per million tokens: about 2 µ₹ an input token and 4 an output token, so 7 requests cost about 290 µ₹ (₹0.00029). */
const prices = { input: 2_000_003n, output: 4_000_007n };

/**
 * The test's own axis bound (independent of the dashboard's): the smallest 1, 2 or 5 × 10^k µ₹
 * (k ≥ 1) at or above the largest bar.
 */
function expectedAxisMax(largest: bigint): bigint {
  for (let power = 10n; ; power *= 10n) {
    for (const factor of [1n, 2n, 5n]) if (factor * power >= largest) return factor * power;
  }
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('the Overview in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let page: Page;
  let organisationId = '';
  let projectId = '';
  let apiKey = '';
  const modelSlug = 'ov-chat';

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);
  const complete = (key: string) => new OpenAI({ apiKey: key, baseURL: stack.gateway.proxyBases[0]!, maxRetries: 0 }).chat.completions.create({
    model: modelSlug, messages: [{ role: 'user', content: 'Hello from the overview test [[fake:reply_words=5]]' }],
  });

  /** Admin API requests the page made (not the live WebSocket), as URLs. */
  const adminRequests: string[] = [];

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startDashboardStack(serverUrl!), launchChromium()]);
    await admin('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Overview Chat', default_max_tokens: 16, max_context_tokens: 4096,
      input_price_micros_per_mtok: prices.input.toString(), output_price_micros_per_mtok: prices.output.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, model: 'upstream-ov-model', api_key: stack.gateway.upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'Micro Spend Ltd', rpm_limit: 600, allowed_gateway_models: [modelSlug] });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: '100000000', reason: 'opening credit' }, { 'idempotency-key': 'ov-opening' });
    const project = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'Checkout' });
    projectId = (project.project as Record<string, string>).id!;
    apiKey = project.api_key as string;
    await admin('POST', `/organisations/${organisationId}/projects`, { name: 'Search' });
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'meera.owner@example.test', role: 'owner' });
    page = await newPersonPage(browser, stack.origin, contexts);
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname.startsWith('/admin/v1/') && url.pathname !== '/admin/v1/live') adminRequests.push(`${request.method()} ${url.pathname}`);
    });
    await acceptLink(page, invitation.link as string, 'Meera Iyer');
  }, 90_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  /** Opens the Overview from the main navigation and waits for its balance. */
  async function openOverview() {
    await page.getByRole('navigation', { name: /main/i }).getByRole('link', { name: /^overview$/i }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await statFigure(page, 'Debited').waitFor();
  }

  /**
   * Makes one completion and waits until the page shows its debit (the live update and the
   * overview read it causes); answers the admin requests the page made meanwhile.
   */
  async function requestsForOneLiveUpdate(): Promise<string[]> {
    const start = adminRequests.length;
    const before = BigInt((await stack.gateway.settledBalance(organisationId)).debited_micros as string);
    // The overview read that carries the new debit (registered before the completion, so it cannot be missed).
    const read = page.waitForResponse(async (response) => {
      if (!response.url().includes('/overview?')) return false;
      const body = await response.json().catch(() => undefined) as { balance?: { debited_micros?: string } } | undefined;
      return body?.balance?.debited_micros !== undefined && BigInt(body.balance.debited_micros) > before;
    }, { timeout: uiTimeout });
    await complete(apiKey);
    const balance = await stack.gateway.settledBalance(organisationId);
    await read;
    await waitForExactText(statFigure(page, 'Debited'), expectedRupees(balance.debited_micros as string));
    return adminRequests.slice(start);
  }

  it('shows the µ₹ the API has: Debited, each recent cost, the budget alert and the cost axis', async () => {
    await openOverview();
    for (let i = 0; i < 7; i++) await complete(apiKey);
    const balance = await stack.gateway.settledBalance(organisationId);
    const debited = BigInt(balance.debited_micros as string);
    expect(debited).toBeGreaterThan(0n);
    expect(debited).toBeLessThan(10_000n); // under a paisa: the old display showed ₹0.00
    await waitForExactText(statFigure(page, 'Debited'), expectedRupees(debited));
    console.info(`7 requests debited ${debited} µ₹, shown as ${expectedRupees(debited)}`);

    // Each recent request's cost, newest first, as the API lists them.
    const usage = await stack.allUsage(organisationId);
    expect(usage.length).toBe(7);
    const recent = page.getByRole('table', { name: /recent requests/i });
    await waitForValue(async () => ((await recent.getByRole('row').count()) === usage.length + 1 ? true : undefined));
    const costs = await recent.getByRole('row').evaluateAll((rows) => rows.slice(1).map((row) => (row.lastElementChild?.textContent ?? '').trim()));
    expect(costs).toEqual(usage.map((record) => expectedRupees(record.cost_micros as string)));
    expect(costs.every((text) => text !== '₹0.00' && text !== '₹0.0000')).toBe(true);

    // The cost-by-day chart's axis runs to a bound just above the day's cost, shown exactly.
    const summary = await admin('GET', `/organisations/${organisationId}/usage/summary?from=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`);
    const byDay = new Map<string, bigint>();
    for (const row of summary.data as Array<Record<string, string>>) byDay.set(row.day!, (byDay.get(row.day!) ?? 0n) + BigInt(row.cost_micros!));
    const largest = [...byDay.values()].reduce((max, value) => (value > max ? value : max), 0n);
    expect(largest).toBe(debited);
    const axis = expectedRupees(expectedAxisMax(largest));
    await page.getByRole('img', { name: new RegExp(`^Cost by day \\(₹\\): ${escape(expectedRupees(largest))} over 1 days with usage; axis ₹0\\.00 to ${escape(axis)}$`) }).waitFor();

    // A budget of ₹0.02 with a 1 % soft alert (₹0.0002), set after the spend: the alert names the exact spend.
    expect(debited).toBeGreaterThanOrEqual(200n);
    const budget = await admin('PUT', `/projects/${projectId}/budget`, { monthly_cap_micros: '20000', soft_alert_percent: 1 });
    expect(budget.spent_micros).toBe(debited.toString());
    const text = `has spent ${expectedRupees(debited)} of its ₹0.02 monthly budget`;
    await page.getByRole('alert').filter({ hasText: text }).first().waitFor();
    const table = page.getByRole('table', { name: /spend by project/i });
    await table.getByRole('row').filter({ hasText: 'Checkout' }).filter({ hasText: expectedRupees(debited) }).waitFor();
  });

  it('makes the same few admin requests per live update with 2 projects as with 40', async () => {
    await openOverview();
    await requestsForOneLiveUpdate(); // settle any read still coming from the test before
    const withTwo = await requestsForOneLiveUpdate();

    for (let i = 3; i <= 40; i++) await admin('POST', `/organisations/${organisationId}/projects`, { name: `Team ${i}` });
    const projects = await admin('GET', `/organisations/${organisationId}/projects?limit=100`);
    expect((projects.data as unknown[]).length).toBe(40);
    await page.reload();
    await page.getByRole('table', { name: /spend by project/i }).getByRole('row').filter({ hasText: 'Team 40' }).waitFor();
    await requestsForOneLiveUpdate();
    const withForty = await requestsForOneLiveUpdate();

    console.info(`admin requests per live update: ${withTwo.length} with 2 projects, ${withForty.length} with 40`);
    expect(withForty.length).toBe(withTwo.length);
    expect(withTwo.length).toBeGreaterThanOrEqual(1);
    expect(withTwo.length).toBeLessThanOrEqual(2);
    expect(withForty.every((request) => request === `GET /admin/v1/organisations/${organisationId}/overview`)).toBe(true);
  });

  it('keeps the chosen date range in the URL across a reload, and offers custom days', async () => {
    await openOverview();
    const range = page.getByRole('combobox', { name: 'Date range' });
    await range.selectOption({ label: 'Today' });
    await page.getByRole('heading', { level: 2, name: 'Usage, today' }).waitFor();
    expect(new URL(page.url()).hash).toContain('range=today');
    await page.reload();
    await page.getByRole('heading', { level: 2, name: 'Usage, today' }).waitFor();
    expect(await range.inputValue()).toBe('today');

    await range.selectOption({ label: 'Custom' });
    const from = page.getByLabel('From');
    const to = page.getByLabel('To', { exact: true });
    await from.waitFor();
    const today = await to.inputValue();
    expect(await from.inputValue()).toBe(today);
    expect(new URL(page.url()).hash).toContain(`range=custom&from=${today}&to=${today}`);
    await page.reload();
    expect(await page.getByLabel('From').inputValue()).toBe(today);
  });
});

/** A text as a literal part of a regular expression. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
