/**
 * The model alias editors in a real browser (Debian's Chromium via playwright-core) against the
 * real ledger, admin and proxy (docs/model-aliases.md): a platform admin sets a platform alias on
 * the platform area's "Model aliases" tab and sees a refusal named beside its field; an
 * organisation's owner overrides it on the organisation's "Model aliases" page; a viewer reads
 * both without a form. Each change is checked where it matters: a completion made with the
 * official `openai` client naming the alias answers as, and is billed as, the slug it reaches.
 */
import OpenAI from 'openai';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startDashboardStack, type DashboardStack } from './support/dashboard-stack.ts';
import { acceptLink, newPersonPage } from './support/person-pages.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

describe.skipIf(!serverUrl || browserMissing !== undefined)('the model alias editors in a browser', () => {
  let stack: DashboardStack;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let organisationId = '';
  let apiKey = '';
  const models = ['alias-main', 'alias-other'];

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  const personPage = () => newPersonPage(browser, stack.origin, contexts);

  /** The slug a completion naming `model` answered as (the proxy shows the slug, never the alias). */
  async function answeredAs(model: string): Promise<string> {
    const client = new OpenAI({ apiKey, baseURL: stack.gateway.proxyBases[0]!, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }] });
    return completion.model;
  }

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startDashboardStack(serverUrl!), launchChromium()]);
    for (const slug of models) {
      await admin('POST', '/gateway-models', {
        slug, display_name: slug, default_max_tokens: 64, max_context_tokens: 4096,
        input_price_micros_per_mtok: '1000003', output_price_micros_per_mtok: '2000007',
        upstream: { provider_kind: 'openai_compatible', base_url: stack.gateway.upstream.baseUrl, model: `upstream-${slug}`, api_key: stack.gateway.upstreamCredential },
      });
    }
    const organisation = await admin('POST', '/organisations', { name: 'Alias Works', allowed_gateway_models: models });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: '100000000', reason: 'opening' }, { 'idempotency-key': 'alias-opening' });
    const project = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'agents' });
    apiKey = project.api_key as string;
  }, 90_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('a platform admin sets a platform alias; a refusal is shown beside its field; requests naming the alias reach the slug', async () => {
    const created = await admin('POST', '/people', { email: 'alias.platform@example.test', platform_admin: true });
    const page = await personPage();
    await acceptLink(page, created.link as string, 'Platform Person');
    await page.goto('/#/platform?tab=aliases');
    await page.getByRole('heading', { level: 1, name: /platform · model aliases/i }).waitFor();
    await page.getByRole('table', { name: 'Platform model aliases' }).getByText('No platform aliases.').waitFor();

    // An alias that is a slug is refused, the message beside the alias field.
    const form = page.getByRole('form', { name: 'Set an alias' });
    // The target list comes from the API: a select once it has arrived.
    await form.getByRole('combobox', { name: 'Gateway model' }).getByRole('option', { name: 'alias-other' }).waitFor({ state: 'attached' });
    await form.getByLabel('Alias', { exact: true }).fill('alias-other');
    await form.getByLabel('Gateway model').selectOption('alias-main');
    await form.getByRole('button', { name: 'Save alias' }).click();
    await form.getByRole('alert').filter({ hasText: /slug of a gateway model/ }).waitFor();

    await form.getByLabel('Alias', { exact: true }).fill('claude-opus-5-5');
    await form.getByLabel('Gateway model').selectOption('alias-main');
    await form.getByRole('button', { name: 'Save alias' }).click();
    const row = page.getByRole('table', { name: 'Platform model aliases' }).getByRole('row').filter({ hasText: 'claude-opus-5-5' });
    await row.getByText('alias-main').waitFor();
    // The PUT returned once the proxy acknowledged it: the alias works at once.
    expect(await answeredAs('claude-opus-5-5')).toBe('alias-main');
  }, 60_000);

  it('an owner overrides it for the organisation, a viewer reads both without a form, and deleting the override restores the platform alias', async () => {
    const ownerInvite = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'alias.owner@example.test', role: 'owner' });
    const owner = await personPage();
    await acceptLink(owner, ownerInvite.link as string, 'Owner Person');
    await owner.getByRole('navigation', { name: /main/i }).getByRole('link', { name: /^model aliases$/i }).click();
    await owner.getByRole('heading', { level: 1, name: /^model aliases$/i }).waitFor();
    // The platform's alias is listed read-only below.
    await owner.getByRole('table', { name: /platform model aliases/i }).getByRole('row').filter({ hasText: 'claude-opus-5-5' }).waitFor();

    const form = owner.getByRole('form', { name: 'Set an alias' });
    await form.getByRole('combobox', { name: 'Gateway model' }).getByRole('option', { name: 'alias-other' }).waitFor({ state: 'attached' });
    await form.getByLabel('Alias', { exact: true }).fill('claude-opus-5-5');
    await form.getByLabel('Gateway model').selectOption('alias-other');
    await form.getByRole('button', { name: 'Save alias' }).click();
    const ownTable = owner.getByRole('table', { name: /your organisation's model aliases/i });
    await ownTable.getByRole('row').filter({ hasText: 'claude-opus-5-5' }).getByText('alias-other').waitFor();
    expect(await answeredAs('claude-opus-5-5')).toBe('alias-other');

    const viewerInvite = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'alias.viewer@example.test', role: 'viewer' });
    const viewer = await personPage();
    await acceptLink(viewer, viewerInvite.link as string, 'Viewer Person');
    await viewer.goto('/#/model-aliases');
    await viewer.getByRole('table', { name: /your organisation's model aliases/i }).getByRole('row').filter({ hasText: 'alias-other' }).waitFor();
    expect(await viewer.getByRole('form', { name: 'Set an alias' }).count()).toBe(0);
    expect(await viewer.getByRole('button', { name: 'Delete' }).count()).toBe(0);

    await ownTable.getByRole('row').filter({ hasText: 'claude-opus-5-5' }).getByRole('button', { name: 'Delete' }).click();
    await owner.getByRole('dialog').getByRole('button', { name: 'Delete alias' }).click();
    await ownTable.getByText(/^No aliases of your own/).waitFor();
    expect(await answeredAs('claude-opus-5-5')).toBe('alias-main');
  }, 90_000);
});
