/**
 * The admin's /metrics over real PostgreSQL: API calls counted by route template (a 404 and a 401
 * included), the dashboard and unmatched paths, payment webhooks by outcome, the config version
 * and the proxies on the config stream; and no id of anything in the text.
 */
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from './common/domain/ids.ts';
import { parsePrometheusText, sharedTestPki, sumSamples, testPostgresUrl, type PrometheusSample } from '@gateway/testkit';
import { connectFakeProxy } from './test-support/fake-proxy.ts';
import {
  expectStatus, postWebhook, startTopUpsHarness, testPaymentKeys, webhookSignature, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();

describe.skipIf(!serverUrl)('admin /metrics', () => {
  let harness: TopUpsHarness;
  beforeAll(async () => { harness = await startTopUpsHarness(serverUrl!); });
  afterAll(async () => { await harness?.close(); });

  /** The admin's /metrics, as text and as samples. */
  const scrape = async (): Promise<{ text: string; samples: PrometheusSample[] }> => {
    const response = await fetch(`http://127.0.0.1:${harness.admin.app.ports.metrics}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    return { text, samples: parsePrometheusText(text) };
  };

  it('counts API calls by route template, status and error code, and never names an id', async () => {
    const { admin } = harness;
    const before = (await scrape()).samples;
    const organisationId = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Metrics Test Private Limited' }), 201).json.id as string;
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}`), 200);
    const nobody = newId('organisation');
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${nobody}`), 404);
    const wrongToken = 'gwadm_not-a-real-token-0123456789';
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}`, undefined, { authorization: `Bearer ${wrongToken}` }), 401);
    expectStatus(await admin.request('GET', `/admin/v1/${organisationId}/no-such-route`), 404);
    const page = await fetch(`${admin.baseUrl}/organisations/${organisationId}`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    await page.arrayBuffer();
    // The kubelet's probes are not requests: not counted.
    for (const probe of ['/healthz', '/readyz', '/healthz/']) expect((await fetch(`${admin.baseUrl}${probe}`)).status).toBe(200);

    const { text, samples } = await scrape();
    const grew = (name: string, labels: Record<string, string>) => sumSamples(samples, name, labels) - sumSamples(before, name, labels);
    const requests = 'gateway_http_requests_total';
    const organisation = '/admin/v1/organisations/:id';
    expect(grew(requests, { route: '/admin/v1/organisations', method: 'POST', status: '201', error_code: '', model: '' })).toBe(1);
    expect(grew(requests, { route: organisation, method: 'GET', status: '200', error_code: '' })).toBe(1);
    expect(grew(requests, { route: organisation, method: 'GET', status: '404', error_code: 'not_found' })).toBe(1);
    expect(grew(requests, { route: organisation, method: 'GET', status: '401', error_code: 'unauthenticated' })).toBe(1);
    expect(grew(requests, { route: 'unmatched', method: 'GET', status: '404', error_code: 'not_found' })).toBe(1);
    expect(grew(requests, { route: '/*page', method: 'GET', status: '200' })).toBe(1);
    expect(grew(requests, {})).toBe(6);
    const durations = 'gateway_http_request_duration_seconds_count';
    expect(grew(durations, { route: organisation, status_class: '2xx' })).toBe(1);
    expect(grew(durations, { route: organisation, status_class: '4xx' })).toBe(2);

    // Route templates only: no organisation id, no path as typed, no credential.
    for (const secretOrId of [organisationId, nobody, wrongToken, admin.token, 'no-such-route']) expect(text).not.toContain(secretOrId);
    const routes = new Set(samples.filter((sample) => sample.name === requests).map((sample) => sample.labels.route));
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/')).toBe(true);
  });

  it('exports the series the payment and alert-email alerts watch at 0 from the start, so increase() sees their first event', async () => {
    const { text } = await scrape();
    for (const kind of ['webhook', 'checkout', 'reconciliation']) {
      expect(text).toContain(`gateway_admin_payment_events_total{kind="${kind}",outcome="mismatch",service="admin"} 0`);
    }
    for (const outcome of ['delivered', 'failed']) {
      expect(text).toContain(`gateway_admin_alert_deliveries_total{channel="email",outcome="${outcome}",service="admin"}`);
    }
    for (const outcome of ['failed', 'shortfall']) {
      expect(text).toContain(`gateway_admin_refund_outcomes_total{outcome="${outcome}",service="admin"} 0`);
    }
  });

  it('counts payment webhooks by outcome', async () => {
    const before = (await scrape()).samples;
    const body = JSON.stringify({ event: 'subscription.charged', payload: {} });
    expectStatus(await postWebhook(harness.admin, body, { signature: 'f'.repeat(64), eventId: 'evt_metrics_1' }), 400);
    expectStatus(await postWebhook(harness.admin, body, { signature: webhookSignature(testPaymentKeys.webhookSecret, body), eventId: 'evt_metrics_2' }), 200);
    const { samples, text } = await scrape();
    const grew = (labels: Record<string, string>) =>
      sumSamples(samples, 'gateway_admin_payment_events_total', labels) - sumSamples(before, 'gateway_admin_payment_events_total', labels);
    expect(grew({ kind: 'webhook', outcome: 'rejected' })).toBe(1);
    expect(grew({ kind: 'webhook', outcome: 'ignored' })).toBe(1);
    expect(grew({ kind: 'webhook', outcome: 'processed' })).toBe(0);
    expect(sumSamples(samples, 'gateway_http_requests_total', { route: '/webhooks/razorpay', status: '400', error_code: 'invalid_request' })).toBe(1);
    expect(text).not.toContain('evt_metrics_');
  });

  it('reports the committed config version and the proxies on this replica\'s config stream', async () => {
    const { admin } = harness;
    expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Config Version Private Limited' }), 201);
    const { samples } = await scrape();
    expect(sumSamples(samples, 'gateway_admin_config_version')).toBeGreaterThan(0);
    expect(sumSamples(samples, 'gateway_admin_connected_proxies')).toBe(0);

    const proxy = connectFakeProxy(admin.grpcTarget, 'metrics-proxy', { autoAck: true });
    try {
      await vi.waitFor(async () => { expect(sumSamples((await scrape()).samples, 'gateway_admin_connected_proxies')).toBe(1); }, { timeout: 10_000, interval: 50 });
      // A change through the API moves the gauge to the version the proxy is sent.
      const versionBefore = sumSamples((await scrape()).samples, 'gateway_admin_config_version');
      expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Another Version Private Limited' }), 201);
      const update = await proxy.next((candidate) => candidate.version > BigInt(versionBefore));
      expect(sumSamples((await scrape()).samples, 'gateway_admin_config_version')).toBe(Number(update.version));
    } finally {
      proxy.close();
    }
    await vi.waitFor(async () => { expect(sumSamples((await scrape()).samples, 'gateway_admin_connected_proxies')).toBe(0); }, { timeout: 10_000, interval: 50 });
  });

  it('reports the expiry of the certificates it loaded: its own as gRPC server and as client, and the CA\'s', async () => {
    const pki = await sharedTestPki();
    const notAfterSeconds = (pem: string) => new X509Certificate(pem).validToDate.getTime() / 1000;
    const own = notAfterSeconds(pki.identities.admin.certPem);
    const series = (await scrape()).samples.filter((sample) => sample.name === 'gateway_tls_certificate_expiry_timestamp_seconds');
    expect(series.map((sample) => [sample.labels.certificate, sample.value])).toEqual([['serving', own], ['client', own], ['ca', notAfterSeconds(pki.caPem)]]);
  });
});
