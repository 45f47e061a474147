/**
 * The request log in a real browser (Debian's Chromium via playwright-core) against the real
 * ledger, admin and proxy: request_log rows seeded in the ledger's database (a 200, a streamed 200
 * with its time to first token and token classes, a 401, a 402, a 429, a 502, and an embeddings
 * call costing 3 µ₹) are what a member sees on the Requests page, figure by figure (time to the
 * millisecond in IST, status and error code, latency, tokens, cost to the µ₹); the status and
 * project filters select exactly their rows; the detail dialog shows every field; and the page
 * and dialog fit a 390 px phone without the page scrolling sideways. The expected text is written
 * here, apart from the dashboard's own formatting code, so a mistake there shows.
 */
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { uiTimeout, waitForValue } from './support/page-waits.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { openScreenshotAlbum, type ScreenshotAlbum } from './support/screenshots.ts';
import { expectedRupees, indianDigits } from './support/rupees.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

/** One seeded request_log row. */
interface Seeded {
  requestId: string;
  project: 'storefront' | 'support';
  surface: 'chat_completions' | 'responses' | 'embeddings' | 'messages';
  status: number;
  errorCode: string | null;
  stream: boolean;
  /** How long before the test's start it began, ms (distinct, so the order is known). */
  agoMs: number;
  latencyMs: number;
  ttftMs: number | null;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
  /** [class, tokens, cost µ₹], as the proxy's recorder writes token_classes. */
  classes?: Array<[string, number, bigint]>;
}

/** Newest first, as the page lists them. */
const seeded: Seeded[] = [
  { requestId: 'req-embed-3micro', project: 'support', surface: 'embeddings', status: 200, errorCode: null, stream: false, agoMs: 61_007, latencyMs: 95, ttftMs: 95, inputTokens: 42, outputTokens: 0, costMicros: 3n },
  { requestId: 'req-502-upstream', project: 'storefront', surface: 'chat_completions', status: 502, errorCode: 'upstream_error', stream: false, agoMs: 122_019, latencyMs: 30_012, ttftMs: null, inputTokens: 0, outputTokens: 0, costMicros: 0n },
  { requestId: 'req-429-limited', project: 'support', surface: 'messages', status: 429, errorCode: 'rate_limit_exceeded', stream: true, agoMs: 183_031, latencyMs: 2, ttftMs: null, inputTokens: 0, outputTokens: 0, costMicros: 0n },
  { requestId: 'req-402-balance', project: 'storefront', surface: 'chat_completions', status: 402, errorCode: 'insufficient_balance', stream: false, agoMs: 244_043, latencyMs: 5, ttftMs: null, inputTokens: 0, outputTokens: 0, costMicros: 0n },
  { requestId: 'req-401-retired', project: 'support', surface: 'chat_completions', status: 401, errorCode: 'invalid_api_key', stream: false, agoMs: 305_055, latencyMs: 3, ttftMs: null, inputTokens: 0, outputTokens: 0, costMicros: 0n },
  {
    requestId: 'req-stream-ok', project: 'storefront', surface: 'responses', status: 200, errorCode: null, stream: true, agoMs: 366_067, latencyMs: 2_345, ttftMs: 140,
    inputTokens: 1_000, outputTokens: 20, costMicros: 7n, classes: [['input', 100, 2n], ['cached_input', 900, 1n], ['output', 20, 4n]],
  },
  { requestId: 'req-chat-ok', project: 'storefront', surface: 'chat_completions', status: 200, errorCode: null, stream: false, agoMs: 427_079, latencyMs: 812, ttftMs: 812, inputTokens: 1_200, outputTokens: 30, costMicros: 1_234_567n },
];

/** The surfaces' names as a person reads them. */
const surfaceNames: Record<Seeded['surface'], string> = {
  chat_completions: 'Chat completions', responses: 'Responses', embeddings: 'Embeddings', messages: 'Messages',
};

/** An instant in IST to the millisecond, "20 Nov 2025, 10:00:01.123 IST", from its UTC fields shifted by +05:30. */
function istText(ms: number): string {
  const shifted = new Date(ms + 5.5 * 3_600_000);
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${shifted.getUTCDate()} ${months[shifted.getUTCMonth()]} ${shifted.getUTCFullYear()}, `
    + `${two(shifted.getUTCHours())}:${two(shifted.getUTCMinutes())}:${two(shifted.getUTCSeconds())}.${String(shifted.getUTCMilliseconds()).padStart(3, '0')} IST`;
}

/** A duration as the page shows it. */
function msText(ms: number | null): string {
  return ms === null ? '—' : `${indianDigits(ms)} ms`;
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('the request log in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  let album: ScreenshotAlbum;
  let ledgerDb: Database;
  const contexts: BrowserContext[] = [];
  let organisationId = '';
  const projectIds = { storefront: '', support: '' };
  const projectNames = { storefront: 'Storefront', support: 'Support bot' };
  let modelSlug = '';
  /** When the test seeded, ms since the epoch with the milliseconds kept (each row is `agoMs` before it). */
  let seededAtMs = 0;
  let page: Page;

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  /** The cells a row of the page shows, for a seeded request. */
  function expectedCells(row: Seeded): string[] {
    const failed = row.status >= 400 || row.errorCode !== null;
    const tokens = `${indianDigits(row.inputTokens)} in / ${indianDigits(row.outputTokens)} out`
      + (row.classes ?? []).map(([name, count]) => `${name.replaceAll('_', ' ')} ${indianDigits(count)}`).join('');
    return [
      istText(seededAtMs - row.agoMs), projectNames[row.project], `${surfaceNames[row.surface]}${row.stream ? 'stream' : ''}`, modelSlug,
      `${row.status}${failed ? ' failed' : ''}${row.errorCode ?? ''}`,
      msText(row.latencyMs), msText(row.ttftMs), tokens, expectedRupees(row.costMicros), `Details of request ${row.requestId}`,
    ];
  }

  /** Waits until the request table's body rows show exactly `expected` (cell texts), failing with what it shows. */
  async function tableShows(on: Page, expected: string[][]): Promise<void> {
    const table: Locator = on.getByRole('table', { name: /^requests/i });
    let found: string[][] = [];
    try {
      await waitForValue(async () => {
        found = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())))
          .catch(() => []);
        return JSON.stringify(found) === JSON.stringify(expected) ? true : undefined;
      });
    } catch {
      expect(found, 'the request table').toEqual(expected);
    }
  }

  /** Sets the filter form's status (and project) and applies it. */
  async function applyFilters(on: Page, filters: { status?: string; project?: string }) {
    if (filters.status !== undefined) await on.getByLabel('Status', { exact: true }).selectOption({ label: filters.status });
    if (filters.project !== undefined) await on.getByLabel('Project', { exact: true }).selectOption({ label: filters.project });
    await on.getByRole('button', { name: 'Apply filters' }).click();
  }

  beforeAll(async () => {
    [stack, browser, album] = await Promise.all([startDashboardStack(serverUrl!), launchChromium(), openScreenshotAlbum()]);
    modelSlug = stack.gateway.modelSlug;
    const organisation = await admin('POST', '/organisations', { name: 'Request Traders', allowed_gateway_models: [modelSlug] });
    organisationId = organisation.id as string;
    for (const key of ['storefront', 'support'] as const) {
      projectIds[key] = (await admin('POST', `/organisations/${organisationId}/projects`, { name: projectNames[key] })).project.id as string;
    }
    ledgerDb = await openDatabase({ url: stack.gateway.databaseUrl, schema: 'ledger', poolSize: 2 });
    seededAtMs = Date.now();
    for (const row of seeded) {
      const classes = row.classes === undefined ? null
        : JSON.stringify(row.classes.map(([name, tokens, cost]) => ({ token_class: name, tokens, cost_micros: Number(cost) })));
      await ledgerDb.query(
        `INSERT INTO request_log (request_id, organisation_id, project_id, surface, model_slug, status, error_code, stream, started_at,
           latency_ms, time_to_first_token_ms, input_tokens, output_tokens, cost_micros, token_classes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, timestamptz 'epoch' + $9::bigint * interval '1 millisecond', $10, $11, $12, $13, $14, $15)`,
        [row.requestId, organisationId, projectIds[row.project], row.surface, modelSlug, row.status, row.errorCode, row.stream,
          seededAtMs - row.agoMs, row.latencyMs, row.ttftMs, row.inputTokens, row.outputTokens, row.costMicros.toString(), classes],
      );
    }
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'meera.viewer@example.test', role: 'viewer' });
    page = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(page, invitation.link as string, 'Meera Joshi');
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await ledgerDb?.close();
    await stack?.close();
  }, 30_000);

  it('lists every request newest first with the figures a person needs, failed ones marked', async () => {
    await page.getByRole('navigation', { name: /main/i }).getByRole('link', { name: /^requests$/i }).click();
    await page.getByRole('heading', { level: 1, name: /^requests$/i }).waitFor();
    await tableShows(page, seeded.map(expectedCells));
    // Failed rows are marked (colour and the word "failed"); successes are not.
    const failedIds = await page.locator('tr.request-failed').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-request-id')));
    expect(failedIds).toEqual(['req-502-upstream', 'req-429-limited', 'req-402-balance', 'req-401-retired']);
    await page.getByText('That is every request.').waitFor();
    await album.take(page, 'requests');
  });

  it('filters by status class, exact status and project', async () => {
    await applyFilters(page, { status: 'Refused (4xx)' });
    const refused = seeded.filter((row) => row.status >= 400 && row.status < 500);
    expect(refused.map((row) => row.status)).toEqual([429, 402, 401]);
    await tableShows(page, refused.map(expectedCells));

    await applyFilters(page, { status: 'Failed (5xx)' });
    await tableShows(page, [expectedCells(seeded[1]!)]);

    await page.getByLabel('Status', { exact: true }).selectOption({ label: 'Exact status…' });
    await page.getByLabel('HTTP status').fill('402');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await tableShows(page, [expectedCells(seeded[3]!)]);

    await page.getByLabel('HTTP status').fill('418');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No request matches these filters.').waitFor();

    await applyFilters(page, { status: 'Success (2xx)', project: 'Storefront' });
    await tableShows(page, [expectedCells(seeded[5]!), expectedCells(seeded[6]!)]);

    await applyFilters(page, { status: 'All', project: 'Support bot' });
    await tableShows(page, seeded.filter((row) => row.project === 'support').map(expectedCells));

    await page.getByRole('button', { name: 'Clear' }).click();
    await tableShows(page, seeded.map(expectedCells));
  });

  it('opens a request\'s details with every field and its token classes, and closes them', async () => {
    const stream = seeded[5]!;
    await page.getByRole('link', { name: `Details of request ${stream.requestId}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Request details' });
    await dialog.waitFor();
    const facts = await waitForValue(async () => {
      const pairs = await dialog.locator('dl.request-facts').evaluate((list) => {
        const terms = [...list.querySelectorAll('dt')].map((term) => (term.textContent ?? '').trim());
        const values = [...list.querySelectorAll('dd')].map((value) => (value.textContent ?? '').replace(/\s+/g, ' ').trim());
        return terms.map((term, index) => [term, values[index] ?? '']);
      }).catch(() => []);
      return pairs.length > 0 ? Object.fromEntries(pairs) as Record<string, string> : undefined;
    });
    const startedAtMs = seededAtMs - stream.agoMs;
    expect(facts).toEqual({
      'Request id': `${stream.requestId} Copy request id`,
      Time: `${istText(startedAtMs)} (${new Date(startedAtMs).toISOString()})`,
      Project: `Storefront ${projectIds.storefront}`,
      API: 'Responses',
      Model: modelSlug,
      Status: '200',
      'Error code': '—',
      Stream: 'Yes',
      Latency: '2,345 ms',
      'Time to first token': '140 ms',
      'Input tokens': '1,000',
      'Output tokens': '20',
      Cost: '₹0.000007',
    });
    const classes = await dialog.getByRole('table', { name: 'Tokens and cost by token class' }).locator('tbody tr')
      .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => (cell.textContent ?? '').trim())));
    expect(classes).toEqual([['input', '100', '₹0.000002'], ['cached input', '900', '₹0.000001'], ['output', '20', '₹0.000004']]);
    expect(page.url()).toContain(`#/requests?request=${stream.requestId}`);
    await album.take(page, 'request-detail');

    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(page.url()).not.toContain('request=');

    // A request of another organisation, or none, is not found: the dialog says so.
    await page.goto(`/#/requests?request=req-not-recorded`);
    await page.getByRole('dialog', { name: 'Request details' }).getByRole('alert').filter({ hasText: /no request/i }).waitFor();
  });

  it('tells a member of an organisation with no requests yet what to do next', async () => {
    const quiet = await admin('POST', '/organisations', { name: 'Quiet Traders', allowed_gateway_models: [modelSlug] });
    const invitation = await admin('POST', `/organisations/${quiet.id as string}/invitations`, { email: 'kabir.quiet@example.test', role: 'developer' });
    const quietPage = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(quietPage, invitation.link as string, 'Kabir Das');
    await quietPage.goto('/#/requests');
    await quietPage.getByText('No requests yet.').waitFor();
    await quietPage.getByText(/make a request to the gateway with an api key from/i).getByRole('link', { name: 'Projects' }).click();
    await quietPage.getByRole('heading', { level: 1, name: /^projects$/i }).waitFor();
  });

  it('loads older requests 50 at a time with "Load more", none twice', async () => {
    const busy = await admin('POST', '/organisations', { name: 'Busy Traders', allowed_gateway_models: [modelSlug] });
    const project = await admin('POST', `/organisations/${busy.id as string}/projects`, { name: 'Batch' });
    // 55 requests one second apart, request ids busy-01 (oldest) .. busy-55 (newest).
    await ledgerDb.query(
      `INSERT INTO request_log (request_id, organisation_id, project_id, surface, model_slug, status, stream, started_at, latency_ms, cost_micros)
       SELECT 'busy-' || lpad(n::text, 2, '0'), $1, $2, 'chat_completions', $3, 200, false, now() - (56 - n) * interval '1 second', n, n
       FROM generate_series(1, 55) AS n`,
      [busy.id, project.project.id, modelSlug],
    );
    const invitation = await admin('POST', `/organisations/${busy.id as string}/invitations`, { email: 'anil.busy@example.test', role: 'viewer' });
    const busyPage = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(busyPage, invitation.link as string, 'Anil Kumar');
    await busyPage.goto('/#/requests');
    const ids = () => busyPage.locator('tbody tr[data-request-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-request-id')));
    const newestFirst = Array.from({ length: 55 }, (_, index) => `busy-${String(55 - index).padStart(2, '0')}`);
    expect(await waitForValue(async () => { const shown = await ids(); return shown.length === 50 ? shown : undefined; })).toEqual(newestFirst.slice(0, 50));
    await busyPage.getByRole('button', { name: 'Load more' }).click();
    expect(await waitForValue(async () => { const shown = await ids(); return shown.length === 55 ? shown : undefined; })).toEqual(newestFirst);
    await busyPage.getByText('That is every request.').waitFor();
    expect(await busyPage.getByRole('button', { name: 'Load more' }).count()).toBe(0);
  });

  it('works 390 px wide: each request is a card of labelled cells, and nothing scrolls sideways', async () => {
    const narrowContext = await browser.newContext({ baseURL: stack.origin, viewport: { width: 390, height: 844 }, timezoneId: 'Asia/Kolkata', locale: 'en-IN' });
    narrowContext.setDefaultTimeout(uiTimeout);
    contexts.push(narrowContext);
    await narrowContext.addCookies(await page.context().cookies());
    const narrow = await narrowContext.newPage();
    await narrow.goto('/#/requests');
    await narrow.getByRole('heading', { level: 1, name: /^requests$/i }).waitFor();
    await tableShows(narrow, seeded.map(expectedCells));
    expect(await narrow.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    // Rows are cards as on every page (styles.css, phones): the table's box does not scroll sideways either,
    // and every row's right edge is on screen.
    const box = narrow.getByRole('region', { name: /^requests/i });
    expect(await box.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    const rightEdges = await box.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getBoundingClientRect().right));
    expect(rightEdges.length).toBe(seeded.length);
    for (const right of rightEdges) expect(right).toBeLessThanOrEqual(390);

    await narrow.getByRole('link', { name: `Details of request ${seeded[3]!.requestId}` }).click();
    const dialog = narrow.getByRole('dialog', { name: 'Request details' });
    await dialog.getByText('insufficient_balance').first().waitFor();
    expect(await narrow.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await dialog.evaluate((element) => element.getBoundingClientRect().right)).toBeLessThanOrEqual(390);
  });
});
