/**
 * The Quickstart and Models pages in a real browser (Debian's Chromium via playwright-core)
 * against the real ledger, admin and proxy. A developer opens Quickstart, sees the proxy's base
 * URL, creates a project and key there, copies the samples (the clipboard holds what the page
 * shows); the curl and the openai-JS samples, taken as the page shows them, are run as is
 * (sh -c; node) against the gateway and answer a completion, and the organisation's balance drops
 * by exactly the usage the ledger recorded for them. A viewer opens Models and sees each token
 * class's exact price per million tokens, and no provider cost.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { waitForValue } from './support/page-waits.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';
import { openScreenshotAlbum, type ScreenshotAlbum } from './support/screenshots.ts';
import { expectedRupees } from './support/rupees.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const modelSlug = 'quick-chat';
const embeddingSlug = 'quick-embed';
const creditMicros = 50_000_000n;

/** Runs a program with `input` on stdin; its stdout, or a rejection carrying its stderr. */
function run(file: string, args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { cwd: repoRoot, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
    child.stdin!.end(input);
  });
}

/** The text of the sample under the heading `title` on the Quickstart page. */
async function snippetText(page: Page, title: string): Promise<string> {
  return (await page.getByRole('region', { name: title, exact: true }).locator('pre').textContent())!;
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('Quickstart and Models in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  let album: ScreenshotAlbum;
  const contexts: BrowserContext[] = [];
  let organisationId = '';

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  beforeAll(async () => {
    [stack, browser, album] = await Promise.all([startDashboardStack(serverUrl!), launchChromium(), openScreenshotAlbum()]);
    const upstream = { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, api_key: stack.gateway.upstreamCredential };
    // Odd prices, µ₹ per million tokens, so any rounding would show.
    await admin('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Quick Chat', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: '3000007', output_price_micros_per_mtok: '15000011',
      cached_input_price_micros_per_mtok: '300001', cache_write_5m_price_micros_per_mtok: '3750009', reasoning_price_micros_per_mtok: '20000017',
      provider_input_cost_micros_per_mtok: '2123457', provider_output_cost_micros_per_mtok: '9876543',
      upstream: { ...upstream, model: 'upstream-quick' },
    });
    await admin('POST', '/gateway-models', {
      slug: embeddingSlug, kind: 'embedding', default_max_tokens: 1, max_context_tokens: 8192,
      input_price_micros_per_mtok: '20001', output_price_micros_per_mtok: '0', upstream: { ...upstream, model: 'upstream-embed' },
    });
    await admin('PUT', '/model-aliases/gpt-4o-mini', { gateway_model: modelSlug });
    const organisation = await admin('POST', '/organisations', { name: 'Quick Starters', allowed_gateway_models: [modelSlug, embeddingSlug] });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: creditMicros.toString(), reason: 'opening' }, { 'idempotency-key': 'quick-opening' });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('a developer gets the base URL and a key on Quickstart, and its curl and openai-JS samples, run as shown, answer and are debited', async () => {
    const invite = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'quick.developer@example.test', role: 'developer' });
    const page = await newPersonPage(browser, stack.origin, contexts);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.origin });
    await acceptLink(page, invite.link as string, 'Dev Person');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Quickstart' }).click();
    await page.getByRole('heading', { level: 1, name: 'Quickstart' }).waitFor();

    const baseUrl = page.getByRole('textbox', { name: 'API base URL' });
    await waitForValue(async () => ((await baseUrl.inputValue()) === stack.gateway.proxyBases[0] ? true : undefined));
    // Before a key is made the samples read it from the environment.
    expect(await snippetText(page, 'curl')).toContain('Bearer $GATEWAY_API_KEY');
    await album.take(page, 'quickstart');

    await page.getByRole('button', { name: 'Create project and key' }).click();
    const keyBox = page.getByRole('group', { name: 'API key' }).getByRole('textbox');
    await keyBox.waitFor();
    const apiKey = await keyBox.inputValue();
    expect(apiKey).toMatch(/^gwsk_/);

    const curl = await snippetText(page, 'curl');
    const openaiJs = await snippetText(page, 'OpenAI SDK for JavaScript');
    expect(curl).toContain(`${stack.gateway.proxyBases[0]}/chat/completions`);
    expect(curl).toContain(apiKey);
    expect(openaiJs).toContain(apiKey);
    expect(openaiJs).toContain(`model: '${modelSlug}'`);
    expect(await snippetText(page, 'Anthropic SDK for JavaScript')).toContain(`baseURL: '${new URL(stack.gateway.proxyBases[0]!).origin}'`);
    for (const [title, text] of [['curl', curl], ['OpenAI SDK for JavaScript', openaiJs]] as const) {
      await page.getByRole('button', { name: `Copy ${title}` }).click();
      await page.getByRole('region', { name: title, exact: true }).getByRole('status').filter({ hasText: 'Copied' }).waitFor();
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(text);
    }

    // The curl sample as shown, with only the status code asked for after it.
    const curlOut = await run('sh', ['-c', `${curl} -w '\\n%{http_code}'`]);
    const status = curlOut.slice(curlOut.lastIndexOf('\n') + 1);
    expect(status, curlOut).toBe('200');
    const completion = JSON.parse(curlOut.slice(0, curlOut.lastIndexOf('\n'))) as { model: string; choices: Array<{ message: { content: string } }> };
    expect(completion.model).toBe(modelSlug);
    expect(completion.choices[0]!.message.content.length).toBeGreaterThan(0);

    // The openai-JS sample as shown, run by node as an ES module (the repository's `openai`).
    const printed = await run(process.execPath, ['--input-type=module'], openaiJs);
    expect(printed.trim().length).toBeGreaterThan(0);

    // Both were debited: two usage records of the new project, and the balance down by exactly their cost.
    const projectId = (await admin('GET', `/organisations/${organisationId}/projects`)).data
      .find((project: { name: string }) => project.name === 'Quickstart').id as string;
    const records = await waitForValue(async () => {
      const found = await stack.allUsage(organisationId);
      return found.length >= 2 ? found : undefined;
    });
    expect(records.map((record) => [record.project_id, record.model])).toEqual([[projectId, modelSlug], [projectId, modelSlug]]);
    const spent = records.reduce((sum, record) => sum + BigInt(record.cost_micros as string), 0n);
    expect(spent).toBeGreaterThan(0n);
    const balance = await stack.gateway.settledBalance(organisationId);
    expect(BigInt(balance.available_micros as string)).toBe(creditMicros - spent);
    expect(BigInt(balance.debited_micros as string)).toBe(spent);
  }, 120_000);

  it('a viewer sees every model on Models with its aliases and exact price per token class, no provider cost', async () => {
    const invite = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'quick.viewer@example.test', role: 'viewer' });
    const page = await newPersonPage(browser, stack.origin, contexts);
    await acceptLink(page, invite.link as string, 'Viewer Person');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Models' }).click();
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();

    const rows = async (slug: string) => page.getByRole('table', { name: `Prices of ${slug} per million tokens` }).locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())));
    await page.getByRole('table', { name: `Prices of ${modelSlug} per million tokens` }).waitFor();
    expect(await rows(modelSlug)).toEqual([
      ['Input', expectedRupees(3_000_007n)],
      ['Cached input', expectedRupees(300_001n)],
      ['Cache write (5 min)', expectedRupees(3_750_009n)],
      ['Cache write (1 h)', expectedRupees(3_000_007n)],
      ['Output', expectedRupees(15_000_011n)],
      ['Reasoning', expectedRupees(20_000_017n)],
    ]);
    expect(expectedRupees(300_001n)).toBe('₹0.300001');
    expect(await rows(embeddingSlug)).toEqual([['Input', '₹0.020001']]);
    const chat = page.getByRole('article', { name: modelSlug });
    expect(await chat.textContent()).toContain('gpt-4o-mini');
    expect(await page.locator('main').textContent()).not.toMatch(/2\.123457|9\.876543|provider/i);
    await album.take(page, 'models');
  }, 90_000);
});
