/**
 * The admin on its default embedded database (PGlite under DATA_DIR/admin), as a first run on
 * one machine uses it: bootstrap token issued once, demo model seeded once, state and config
 * versions kept across a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { isWellFormedSecret, issueSecret } from '@gateway/secrets';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { createAdminApp, type AdminApp } from './app.ts';
import { loadAdminConfig } from './config.ts';
import { agentBuiltInModelNames } from './catalog/domain/agent-model-names.ts';
import { gatewayModelResponse } from './catalog/http/catalog-schemas.ts';
import { captureLogs } from './test-support/captured-logs.ts';
import { startFakeLedger } from './test-support/fake-ledger.ts';
import { connectFakeProxy } from './test-support/fake-proxy.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'admin-pglite-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('the admin on embedded PGlite', () => {
  it('issues a bootstrap token once, seeds the demo model once, and keeps state and versions across a restart', async () => {
    const ledger = await startFakeLedger();
    const tlsEnv = serviceTlsEnv(await sharedTestPki(), 'admin');
    const logs = captureLogs();
    const encryptionKey = randomBytes(32).toString('base64');
    const env = (demoUrl: string, extra: Record<string, string> = {}) => loadAdminConfig({
      ...tlsEnv,
      DATA_DIR: dataDir, ADMIN_HTTP_PORT: '0', ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: '0', LEDGER_GRPC_URL: ledger.target,
      ADMIN_ENCRYPTION_KEY: encryptionKey, DEMO_UPSTREAM_URL: demoUrl, SNAPSHOT_ACK_TIMEOUT_MS: '300',
      // As `pnpm start` runs it: the demo upstream is on loopback, which only this setting serves.
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', ...extra,
    });
    const issued: string[] = [];
    const call = async (app: AdminApp, token: string, method: string, path: string, body?: unknown) => {
      const response = await fetch(`http://127.0.0.1:${app.ports.http}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: await response.json() as Record<string, any> };
    };

    let versionBeforeRestart: bigint;
    const first = await createAdminApp(env('http://127.0.0.1:8788/v1/'), { logger: logs.logger, onBootstrapToken: (secret) => issued.push(secret) });
    try {
      expect(first.isReady()).toBe(true);
      expect(issued).toHaveLength(1);
      expect(isWellFormedSecret('adminToken', issued[0]!)).toBe(true);
      const demo = await call(first, issued[0]!, 'GET', '/admin/v1/gateway-models/demo');
      expect(demo.status).toBe(200);
      expect(gatewayModelResponse.parse(demo.json)).toEqual({
        slug: 'demo', display_name: 'Demo (built-in demo upstream, no provider account)',
        kind: 'chat', input_modalities: ['text', 'image', 'audio'],
        reasoning_efforts: ['low', 'medium', 'high'], thinking_modes: [], max_thinking_budget_tokens: 0, returns_reasoning: true, default_max_tokens: 256, max_context_tokens: 200_000,
        input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '2000000',
        provider_input_cost_micros_per_mtok: '0', provider_output_cost_micros_per_mtok: '0',
        cached_input_price_micros_per_mtok: '1000000', cache_write_5m_price_micros_per_mtok: '1000000', cache_write_1h_price_micros_per_mtok: '1000000',
        reasoning_price_micros_per_mtok: null, audio_input_price_micros_per_mtok: '1000000', image_input_price_micros_per_mtok: '1000000',
        provider_cached_input_cost_micros_per_mtok: '0', provider_cache_write_5m_cost_micros_per_mtok: '0', provider_cache_write_1h_cost_micros_per_mtok: '0',
        provider_reasoning_cost_micros_per_mtok: null, provider_audio_input_cost_micros_per_mtok: '0', provider_image_input_cost_micros_per_mtok: '0',
        upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:8788/v1', model: 'demo', has_api_key: false, allow_private_network: false, priority: 0, weight: 1 },
        created_at: demo.json.created_at,
      });
      const organisation = await call(first, issued[0]!, 'POST', '/admin/v1/organisations', { name: 'Local', allowed_gateway_models: ['demo'] });
      expect(organisation.status).toBe(201);
      const project = await call(first, issued[0]!, 'POST', `/admin/v1/organisations/${organisation.json.id}/projects`, { name: 'p' });
      expect(project.status).toBe(201);
      // The embedded demo seeds the agents' built-in names onto the demo model (README, "Agents").
      const aliases = await call(first, issued[0]!, 'GET', '/admin/v1/model-aliases');
      expect(aliases.json.data.map((alias: { alias: string }) => alias.alias).sort())
        .toEqual([...agentBuiltInModelNames.claudeCode, ...agentBuiltInModelNames.codex].sort());
      expect(new Set(aliases.json.data.map((alias: { gateway_model: string }) => alias.gateway_model))).toEqual(new Set(['demo']));
      const proxy = connectFakeProxy(`127.0.0.1:${first.ports.grpc}`, 'pglite-proxy', { autoAck: true });
      const full = await proxy.next((update) => update.full);
      versionBeforeRestart = full.version;
      expect(full.platformModelAliases).toMatchObject({ 'claude-opus-5-5': 'demo', 'gpt-6.2-sol': 'demo' });
      proxy.close();
    } finally {
      await first.close();
    }
    expect(first.isReady()).toBe(false);

    // Restart on the same data: another demo URL and a bootstrap token must change nothing.
    const ignoredToken = issueSecret('adminToken').secret;
    const second = await createAdminApp(env('http://127.0.0.1:9999/v1', { ADMIN_BOOTSTRAP_TOKEN: ignoredToken }), {
      logger: logs.logger, onBootstrapToken: (secret) => issued.push(secret),
    });
    try {
      expect(issued).toHaveLength(1);
      expect((await call(second, ignoredToken, 'GET', '/admin/v1/organisations')).status).toBe(401);
      const organisations = await call(second, issued[0]!, 'GET', '/admin/v1/organisations');
      expect(organisations.json.data.map((organisation: { name: string }) => organisation.name)).toEqual(['Local']);
      const demo = await call(second, issued[0]!, 'GET', '/admin/v1/gateway-models/demo');
      expect(demo.json.upstream.base_url).toBe('http://127.0.0.1:8788/v1');
      const proxy = connectFakeProxy(`127.0.0.1:${second.ports.grpc}`, 'pglite-proxy', { autoAck: true });
      expect((await proxy.next((update) => update.full)).version).toBe(versionBeforeRestart);
      proxy.close();
    } finally {
      await second.close();
      await ledger.close();
    }
    expect(logs.text()).not.toContain(issued[0]!);
    expect(logs.text()).not.toContain(ignoredToken);
  });

  it('issues no token when nobody can be shown it, and says so', async () => {
    const logs = captureLogs();
    const app = await createAdminApp(loadAdminConfig({
      ...serviceTlsEnv(await sharedTestPki(), 'admin'),
      DATA_DIR: mkdtempSync(join(dataDir, 'no-handover-')), ADMIN_HTTP_PORT: '0', ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: '0',
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    }), { logger: logs.logger });
    try {
      expect(logs.text()).toContain('no platform-admin token exists and none was issued');
    } finally {
      await app.close();
    }
  });
});
