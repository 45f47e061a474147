/**
 * Usage by token class in a real browser (Debian's Chromium via playwright-core) against the real
 * ledger, admin and proxy: completions made with the official `openai` client through a fake
 * upstream that reports cached input and reasoning tokens (`[[fake:usage_classes=…]]`), and one
 * plain completion. The organisation's usage page shows, per class, the tokens and cost the
 * ledger's records carry (summed), with the plain request counted apart; the platform's analytics
 * page shows the same classes at customer price and provider cost, in total and per model. Every
 * figure on screen is compared with the records the usage API lists, to the µ₹.
 */
import OpenAI from 'openai';
import type { Browser, BrowserContext, Locator } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { waitForValue } from './support/page-waits.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { expectedRupees, indianDigits } from './support/rupees.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();
const modelSlug = 'classes-chat';

/** A class of the records summed: tokens, customer cost and provider cost, µ₹. */
interface ClassSum {
  tokens: bigint;
  cost: bigint;
  provider: bigint;
}

/** The cells of a table's body rows as the page shows them, once they have the expected count. */
async function bodyCells(table: Locator, rows: number): Promise<string[][]> {
  let found: string[][] = [];
  try {
    return await waitForValue(async () => {
      found = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
      return found.length === rows && found.every((cells) => cells.length > 1) ? found : undefined;
    });
  } catch {
    throw new Error(`expected ${rows} rows, the table shows ${JSON.stringify(found)}`);
  }
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('usage by token class in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let organisationId = '';
  let apiKey = '';

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  const personPage = () => newPersonPage(browser, stack.origin, contexts);

  /** The ledger's records of the organisation summed by class, and the records without classes (count, cost, provider cost). */
  async function ledgerFigures() {
    // The Settles reach the ledger after the answers (the proxy's outbox): wait for all three records.
    const records = await waitForValue(async () => {
      const found = await stack.allUsage(organisationId);
      return found.length >= 3 ? found : undefined;
    });
    const classes = new Map<string, ClassSum>();
    const unclassified = { requests: 0n, cost: 0n, provider: 0n };
    for (const record of records) {
      const byClass = record.cost_by_class as Record<string, { tokens: number; cost_micros: string; provider_cost_micros: string }> | undefined;
      if (byClass === undefined) {
        unclassified.requests += 1n;
        unclassified.cost += BigInt(record.cost_micros as string);
        unclassified.provider += BigInt(record.provider_cost_micros as string);
        continue;
      }
      for (const [name, figures] of Object.entries(byClass)) {
        const sum = classes.get(name) ?? { tokens: 0n, cost: 0n, provider: 0n };
        sum.tokens += BigInt(figures.tokens);
        sum.cost += BigInt(figures.cost_micros);
        sum.provider += BigInt(figures.provider_cost_micros);
        classes.set(name, sum);
      }
    }
    const names = [...classes.keys()].sort();
    return { records, names, classes, unclassified };
  }

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startDashboardStack(serverUrl!), launchChromium()]);
    // Odd prices, µ₹ per million tokens, so every rounding shows; cached input costs the platform less than input.
    await admin('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Classes Chat', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: '3000007', output_price_micros_per_mtok: '15000011',
      cached_input_price_micros_per_mtok: '300001', reasoning_price_micros_per_mtok: '20000017',
      provider_input_cost_micros_per_mtok: '2000000', provider_cached_input_cost_micros_per_mtok: '200000',
      upstream: { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, model: 'upstream-classes', api_key: stack.gateway.upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'Class Traders', allowed_gateway_models: [modelSlug] });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: '100000000', reason: 'opening' }, { 'idempotency-key': 'classes-opening' });
    const project = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'agents' });
    apiKey = project.api_key as string;

    const client = new OpenAI({ apiKey, baseURL: stack.gateway.proxyBases[0]!, maxRetries: 0 });
    const ask = (content: string) => client.chat.completions.create({ model: modelSlug, messages: [{ role: 'user', content }], max_tokens: 32 });
    // Two itemised completions (cache reads, reasoning) and one plain one.
    await ask(`${'word '.repeat(50)}[[fake:reply_words=5]] [[fake:usage_classes=cached:30,reasoning:7]]`);
    await ask(`${'word '.repeat(40)}[[fake:reply_words=3]] [[fake:usage_classes=cached:12]]`);
    await ask('plain question [[fake:reply_words=2]]');
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('the usage page shows each class\'s tokens and cost as the ledger recorded them, provider cost to platform admins only, and the plain request apart', async () => {
    const { records, names, classes, unclassified } = await ledgerFigures();
    expect(records).toHaveLength(3);
    expect(names).toEqual(expect.arrayContaining(['cached_input', 'input', 'output', 'reasoning']));
    expect(unclassified.requests).toBe(1n);

    const created = await admin('POST', '/people', { email: 'classes.platform@example.test', platform_admin: true });
    const platform = await personPage();
    await acceptLink(platform, created.link as string, 'Platform Person');
    await platform.goto(`/#/usage?organisation=${organisationId}`);
    await platform.getByRole('heading', { level: 1, name: /^usage$/i }).waitFor();
    const table = platform.getByRole('table', { name: 'Tokens and cost by token class' });
    expect(await bodyCells(table, names.length)).toEqual(names.map((name) => {
      const sum = classes.get(name)!;
      return [name.replaceAll('_', ' '), indianDigits(sum.tokens.toString()), expectedRupees(sum.cost), expectedRupees(sum.provider)];
    }));
    const plain = platform.getByTestId('usage-unclassified');
    await plain.waitFor();
    expect((await plain.textContent())!.replace(/\s+/g, ' ').trim()).toBe(
      `1 requests without token classes (plain input and output): ${expectedRupees(unclassified.cost)}, provider cost ${expectedRupees(unclassified.provider)}.`,
    );
    // The classes and the plain request make up the whole cost the ledger recorded.
    const recorded = records.reduce((sum, record) => sum + BigInt(record.cost_micros as string), 0n);
    expect([...classes.values()].reduce((sum, entry) => sum + entry.cost, 0n) + unclassified.cost).toBe(recorded);

    // An organisation's viewer sees the same classes and costs, never the provider's cost.
    const invite = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'classes.viewer@example.test', role: 'viewer' });
    const viewer = await personPage();
    await acceptLink(viewer, invite.link as string, 'Viewer Person');
    await viewer.goto('/#/usage');
    const viewerTable = viewer.getByRole('table', { name: 'Tokens and cost by token class' });
    expect(await bodyCells(viewerTable, names.length)).toEqual(names.map((name) => {
      const sum = classes.get(name)!;
      return [name.replaceAll('_', ' '), indianDigits(sum.tokens.toString()), expectedRupees(sum.cost)];
    }));
    expect(await viewerTable.getByRole('columnheader', { name: 'Provider cost' }).count()).toBe(0);
    expect((await viewer.getByTestId('usage-unclassified').textContent())!.replace(/\s+/g, ' ').trim()).toBe(
      `1 requests without token classes (plain input and output): ${expectedRupees(unclassified.cost)}.`,
    );
  }, 90_000);

  it('platform analytics shows each class at customer price and provider cost, in total and per model', async () => {
    const { records, names, classes, unclassified } = await ledgerFigures();
    const page = await personPage();
    const created = await admin('POST', '/people', { email: 'classes.analyst@example.test', platform_admin: true });
    await acceptLink(page, created.link as string, 'Analyst Person');
    await page.goto('/#/analytics');
    await page.getByRole('heading', { level: 1, name: /^analytics$/i }).waitFor();
    const expectedLines = (group: string) => names.map((name) => {
      const sum = classes.get(name)!;
      return [group, name.replaceAll('_', ' '), indianDigits(sum.tokens.toString()), expectedRupees(sum.cost), expectedRupees(sum.provider)];
    });
    // Grouped by day: every usage of the run is of today (IST), so the day's classes equal the totals.
    const byDay = page.getByRole('table', { name: /^Commercial usage by token class, in total and by day/ });
    const dayLines = await bodyCells(byDay, 2 * names.length);
    expect(dayLines.slice(0, names.length)).toEqual(expectedLines('All commercial usage'));
    expect(dayLines.slice(names.length).map((cells) => cells.slice(1))).toEqual(expectedLines('').map((cells) => cells.slice(1)));
    await page.getByTestId('analytics-unclassified').filter({ hasText: `${unclassified.requests} requests without token classes` }).waitFor();

    await page.getByLabel('Group by').selectOption('model');
    await page.getByRole('button', { name: 'Show' }).click();
    const byModel = page.getByRole('table', { name: 'Commercial usage by token class, in total and by gateway model' });
    expect(await bodyCells(byModel, 2 * names.length)).toEqual([...expectedLines('All commercial usage'), ...expectedLines(modelSlug)]);

    // By upstream deployment (issue 29): the model's one deployment, "primary", answered every
    // request; its customer price, provider cost and margin are the records' sums, to the µ₹.
    const cost = records.reduce((sum, record) => sum + BigInt(record.cost_micros as string), 0n);
    const provider = records.reduce((sum, record) => sum + BigInt(record.provider_cost_micros as string), 0n);
    const byDeployment = page.getByRole('table', { name: 'Requests, customer price, provider cost and margin by gateway model and upstream deployment' });
    expect(await bodyCells(byDeployment, 1)).toEqual([[
      modelSlug, 'primary', indianDigits(String(records.length)), expectedRupees(cost), expectedRupees(provider), expectedRupees(cost - provider),
      `0 (${expectedRupees(0n)})`,
    ]]);
  }, 90_000);
});
