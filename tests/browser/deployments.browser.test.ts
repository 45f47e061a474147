/**
 * The upstream deployments editor in a real browser (Debian's Chromium via playwright-core)
 * against the real ledger, admin and proxy (issue 29; docs/proxy.md "Routing"): a platform admin
 * opens a gateway model's deployments from the Gateway models tab, adds one, is refused a second
 * of the same name (the API's 409 beside the name), changes its weight and deletes it. Each step
 * is checked against GET /admin/v1/upstream-deployments, and the deployment added in the browser
 * is shown to carry traffic: with the model's own upstream pointed at a closed port, a completion
 * made with the official `openai` client is answered through it.
 */
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { openScreenshotAlbum, type ScreenshotAlbum } from './support/screenshots.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();
const slug = 'deploy-chat';

describe.skipIf(!serverUrl || browserMissing !== undefined)('the upstream deployments editor in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  let album: ScreenshotAlbum;
  const contexts: BrowserContext[] = [];
  let apiKey = '';

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  /** The model's further deployments as the API lists them. */
  async function listed(): Promise<Array<Record<string, unknown>>> {
    return (await admin('GET', `/upstream-deployments?gateway_model=${slug}`)).data as Array<Record<string, unknown>>;
  }

  /** The deployments table's body rows, cell texts. */
  async function tableRows(page: Page, count: number): Promise<string[][]> {
    const table = page.getByRole('table', { name: `Upstream deployments of ${slug}` });
    await expect.poll(async () => table.locator('tbody tr').count(), { timeout: 10_000 }).toBe(count);
    return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
  }

  beforeAll(async () => {
    [stack, browser, album] = await Promise.all([startDashboardStack(serverUrl!), launchChromium(), openScreenshotAlbum()]);
    await admin('POST', '/gateway-models', {
      slug, display_name: 'Deploy chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: '1000003', output_price_micros_per_mtok: '2000007',
      upstream: { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, model: 'upstream-primary', api_key: stack.gateway.upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'Deploy Works', allowed_gateway_models: [slug] });
    await admin('POST', `/organisations/${organisation.id as string}/credits`, { amount_micros: '100000000', reason: 'opening' }, { 'idempotency-key': 'deploy-opening' });
    apiKey = (await admin('POST', `/organisations/${organisation.id as string}/projects`, { name: 'agents' })).api_key as string;
  }, 90_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('adds, refuses a duplicate, edits and deletes a deployment; the one added carries traffic when the primary is down', async () => {
    const created = await admin('POST', '/people', { email: 'deploy.platform@example.test', platform_admin: true });
    const page = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(page, created.link as string, 'Platform Person');
    await page.goto('/#/platform?tab=models');
    await page.getByRole('button', { name: `Deployments of ${slug}` }).click();
    const primaryRow = (await tableRows(page, 1))[0]!;
    expect(primaryRow.slice(0, 4)).toEqual(['primary', `openai_compatible · upstream-primary${stack.gateway.upstream.baseUrl}credential set`, '0', '1']);

    // Add one.
    await page.getByRole('button', { name: 'Add deployment' }).click();
    const form = page.getByRole('form', { name: 'Deployment' });
    await form.getByLabel('Name', { exact: true }).fill('backup');
    await form.getByLabel('Upstream base URL').fill(stack.gateway.upstream.baseUrl);
    await form.getByLabel('Upstream model name').fill('upstream-backup');
    await form.getByLabel('Upstream credential').fill(stack.gateway.upstreamCredential);
    await form.getByLabel(/Allow a private-network upstream/).check();
    await form.getByLabel('Priority', { exact: true }).fill('1');
    await form.getByLabel('Weight', { exact: true }).fill('2');
    await form.getByLabel('Provider cost, input (₹ per million tokens)').fill('7');
    await form.getByLabel('Provider cost, output (₹ per million tokens)').fill('9.000001');
    await form.getByRole('button', { name: 'Add deployment' }).click();
    const rows = await tableRows(page, 2);
    expect(rows[1]!.slice(0, 5)).toEqual(['backup', `openai_compatible · upstream-backup${stack.gateway.upstream.baseUrl}credential set · private network allowed`, '1', '2', 'in ₹7.00out ₹9.000001']);
    const [backup] = await listed();
    expect(backup).toMatchObject({
      name: 'backup', priority: 1, weight: 2, provider_input_cost_micros_per_mtok: '7000000', provider_output_cost_micros_per_mtok: '9000001',
      upstream: { provider_kind: 'openai_compatible', model: 'upstream-backup', has_api_key: true, allow_private_network: true },
    });
    expect(JSON.stringify(backup)).not.toContain(stack.gateway.upstreamCredential);
    await album.take(page, 'deployments');

    // A second "backup" is the API's 409, shown beside the name.
    await page.getByRole('button', { name: 'Add deployment' }).click();
    await form.getByLabel('Name', { exact: true }).fill('backup');
    await form.getByLabel('Upstream base URL').fill(stack.gateway.upstream.baseUrl);
    await form.getByLabel('Upstream model name').fill('upstream-other');
    await form.getByLabel(/Allow a private-network upstream/).check();
    await form.getByRole('button', { name: 'Add deployment' }).click();
    await form.getByText(/already has a deployment named "backup"/).waitFor();
    await form.getByRole('button', { name: 'Cancel' }).click();
    expect(await listed()).toHaveLength(1);

    // Its weight changes.
    await page.getByRole('button', { name: 'Edit backup' }).click();
    await form.getByLabel('Weight', { exact: true }).fill('5');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(async () => (await tableRows(page, 2))[1]![3]).toBe('5');
    expect((await listed())[0]).toMatchObject({ name: 'backup', weight: 5, priority: 1 });

    // With the primary at a closed port, the deployment added here answers.
    await admin('PATCH', `/gateway-models/${slug}`, { upstream: { base_url: 'http://127.0.0.1:9/v1', allow_private_network: true } });
    const client = new OpenAI({ apiKey, baseURL: stack.gateway.proxyBases[0]!, maxRetries: 0 });
    await expect.poll(async () => {
      try {
        return (await client.chat.completions.create({ model: slug, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }] })).model;
      } catch {
        return 'failed';
      }
    }, { timeout: 15_000 }).toBe(slug);
    const answered = await client.chat.completions.create({ model: slug, messages: [{ role: 'user', content: 'again [[fake:reply_words=2]]' }] });
    expect(answered.model).toBe(slug);
    expect(JSON.stringify(answered)).not.toContain('backup');

    // Deleted after a confirmation.
    await page.getByRole('table', { name: `Upstream deployments of ${slug}` }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete the deployment backup?' }).getByRole('button', { name: 'Delete deployment' }).click();
    await tableRows(page, 1);
    expect(await listed()).toEqual([]);
  }, 120_000);
});
