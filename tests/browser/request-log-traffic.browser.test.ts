/**
 * The request log with real traffic, seen in a real browser (Debian's Chromium via playwright-core):
 * requests sent through the real proxy to the fake upstream by one organisation — served (plain and
 * streamed), an upstream failure (502), a project over its monthly budget (402), the organisation
 * over its requests per minute (429) and a key rotated away (401) — each appear on the Requests page
 * next to each other, with the status, error code and latency the admin API gives for the same
 * request, and the cost of each served one equal to its usage record to the µ₹. Nothing is seeded:
 * the rows are what the proxy reported to the ledger.
 */
import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { waitForValue } from './support/page-waits.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { indianDigits } from './support/rupees.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

/** What the client saw of one request it sent. */
interface Sent {
  requestId: string;
  status: number;
}

/** One request as the admin API lists it (the fields this test compares). */
interface Listed {
  request_id: string;
  status: number;
  error_code: string | null;
  latency_ms: number;
  cost_micros: string;
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('the request log of real traffic in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let page: Page;
  let organisationId = '';
  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  /** Sends one chat completion with its own request id through the proxy; answers the id and the status. */
  async function chat(apiKey: string, content: string, stream = false): Promise<Sent> {
    const requestId = `traffic-${randomUUID()}`;
    const response = await fetch(`${stack.gateway.proxyBases[0]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({
        model: stack.gateway.modelSlug, max_tokens: 64, messages: [{ role: 'user', content }], stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      }),
    });
    await response.text();
    return { requestId, status: response.status };
  }

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startDashboardStack(serverUrl!), launchChromium()]);
    const organisation = await admin('POST', '/organisations', { name: 'Traffic Traders', rpm_limit: 8, allowed_gateway_models: [stack.gateway.modelSlug] });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: '100000000', reason: 'opening credit' }, { 'idempotency-key': `traffic-${organisationId}` });
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'tara.viewer@example.test', role: 'viewer' });
    page = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(page, invitation.link as string, 'Tara Menon');
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('lists a 401, a 402, a 429 and a 502 next to the 200s, with the statuses and latencies the API gives', async () => {
    const shop = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'Shop' });
    const capped = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'Capped' });
    // A budget of 1 µ₹: any Reserve of the project is over it (PROJECT_BUDGET), so its request is a 402.
    await admin('PUT', `/projects/${capped.project.id}/budget`, { monthly_cap_micros: '1' });

    const served = await chat(shop.api_key, 'hello [[fake:reply_words=4]]');
    const streamed = await chat(shop.api_key, 'hello [[fake:reply_words=6]] [[fake:chunk_delay_ms=20]]', true);
    const failed = await chat(shop.api_key, 'hello [[fake:status=500]]');
    const overBudget = await chat(capped.api_key, 'hello [[fake:reply_words=4]]');
    expect([served.status, streamed.status, failed.status, overBudget.status]).toEqual([200, 200, 502, 402]);
    // The organisation allows 8 requests a minute: keep sending until the limit answers.
    let limited: Sent | undefined;
    const beforeLimit: Sent[] = [];
    for (let attempt = 0; attempt < 12 && limited === undefined; attempt += 1) {
      const sent = await chat(shop.api_key, 'hello [[fake:reply_words=2]]');
      if (sent.status === 429) limited = sent;
      else beforeLimit.push(sent);
    }
    expect(limited, 'a 429 within 12 requests of an 8 per minute limit').toBeDefined();
    // The key rotated away: the client gets the unknown key's 401, the project's log shows it.
    const rotation = await admin('POST', `/projects/${shop.project.id}/api-key-rotations`);
    expect(rotation.api_key).not.toBe(shop.api_key);
    const rotated = await chat(shop.api_key, 'hello');
    expect(rotated.status).toBe(401);

    const sent = [served, streamed, failed, overBudget, ...beforeLimit, limited!, rotated];
    // The proxy reports finished requests in batches about every second: wait until the API lists them all.
    const listed = await waitForValue(async () => {
      const page = await admin('GET', `/organisations/${organisationId}/requests?limit=100`);
      const byId = new Map((page.data as Listed[]).map((record) => [record.request_id, record]));
      return sent.every((request) => byId.has(request.requestId)) ? byId : undefined;
    });
    for (const request of sent) expect(listed.get(request.requestId)!.status, request.requestId).toBe(request.status);
    console.info('request log of real traffic:', sent.map((request) => {
      const record = listed.get(request.requestId)!;
      return `${record.status}${record.error_code ? ` ${record.error_code}` : ''} ${record.latency_ms} ms ${record.cost_micros} µ₹`;
    }).join('; '));
    expect(new Set(sent.map((request) => request.status))).toEqual(new Set([200, 401, 402, 429, 502]));
    // Served requests cost what their usage record cost, to the µ₹.
    const usage = await admin('GET', `/organisations/${organisationId}/usage?limit=100`);
    const usageCost = new Map((usage.data as Array<{ request_id: string; cost_micros: string }>).map((record) => [record.request_id, record.cost_micros]));
    for (const request of [served, streamed]) {
      expect(BigInt(listed.get(request.requestId)!.cost_micros)).toBeGreaterThan(0n);
      expect(listed.get(request.requestId)!.cost_micros).toBe(usageCost.get(request.requestId));
    }

    await page.getByRole('navigation', { name: /main/i }).getByRole('link', { name: /^requests$/i }).click();
    await page.getByRole('heading', { level: 1, name: /^requests$/i }).waitFor();
    // Each request's row shows the status (and error code) and the latency the API lists for it.
    for (const request of sent) {
      const record = listed.get(request.requestId)!;
      const row = page.locator(`tr[data-request-id="${request.requestId}"]`);
      await row.waitFor();
      const cells = await row.locator('td').allTextContents();
      const failedText = record.status >= 400 || record.error_code !== null ? ' failed' : '';
      expect(cells.map((cell) => cell.trim()), request.requestId).toEqual(expect.arrayContaining([
        `${record.status}${failedText}${record.error_code ?? ''}`,
        `${indianDigits(record.latency_ms)} ms`,
      ]));
    }
    const shownStatuses = await page.locator('tr[data-request-id^="traffic-"]').evaluateAll((rows) => rows.length);
    expect(shownStatuses).toBe(sent.length);
  }, 180_000);
});
