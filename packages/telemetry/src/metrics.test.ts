import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { metricCatalogue } from './metric-catalogue.ts';
import { createServiceMetrics } from './service-metrics.ts';
import { startMetricsServer } from './metrics-server.ts';

/** Labels that would make a series per customer (unbounded cardinality) and leak who uses the gateway. */
const forbiddenLabels = ['organisation_id', 'organization_id', 'organisation', 'project_id', 'project', 'key_id', 'api_key', 'person_id', 'request_id', 'user'];

describe('metric catalogue', () => {
  const descriptors = Object.values(metricCatalogue);

  it('gives every metric a unique Prometheus name with the suffix its type calls for', () => {
    const names = descriptors.map((descriptor) => descriptor.name);
    expect(new Set(names).size).toBe(names.length);
    for (const descriptor of descriptors) {
      // A service's own metrics carry its name; http and tls are what every service exports alike.
      expect(descriptor.name).toMatch(/^gateway_(http|tls|proxy|ledger|admin)_[a-z0-9_]+$/);
      if (descriptor.type === 'counter') expect(descriptor.name).toMatch(/_total$/);
      else expect(descriptor.name).not.toMatch(/_total$/);
    }
  });

  it('never labels a series with a customer, key, person or request id', () => {
    for (const descriptor of descriptors) {
      expect(descriptor.labelNames.filter((label) => forbiddenLabels.includes(label)), descriptor.name).toEqual([]);
    }
  });
});

describe('service metrics and the /metrics listener', () => {
  it('serves only the service\'s own metrics, labelled with the service, plus the Node.js defaults', async () => {
    const metrics = createServiceMetrics('ledger');
    let refreshed = 0;
    metrics.onCollect(() => { refreshed += 1; metrics.ledgerHoldsPastDeadline.set({ kind: 'grant' }, 2); });
    metrics.onCollect(() => { throw new Error('a broken refresh does not stop the scrape'); });
    metrics.ledgerBatchSize.observe({ operation: 'settle' }, 17);
    const server = await startMetricsServer({ metrics, host: '127.0.0.1', port: 0, logger: createLogger('ledger', 'silent') });
    try {
      const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      const text = await response.text();
      expect(refreshed).toBe(1);
      expect(text).toContain('gateway_ledger_holds_past_deadline{kind="grant",service="ledger"} 2');
      expect(text).toContain('gateway_ledger_batch_size_bucket{le="32",service="ledger",operation="settle"} 1');
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds\{service="ledger"\} /m);
      expect(text).not.toContain('gateway_proxy_');
      expect(text).not.toContain('gateway_http_requests_total');

      const other = await fetch(`http://127.0.0.1:${server.port}/v1/models`);
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ error: { code: 'not_found' } });
    } finally {
      await server.close(0);
    }
  });

  it('answers a scrape whose refresh hangs (a database that does not answer), with that refresh\'s last values', async () => {
    const metrics = createServiceMetrics('admin');
    let calls = 0;
    metrics.onCollect(() => {
      calls += 1;
      if (calls === 1) { metrics.adminConfigVersion.set(7); return; }
      return new Promise<void>(() => {}); // never settles
    });
    expect(await metrics.render()).toContain('gateway_admin_config_version{service="admin"} 7');
    // The second scrape's refresh hangs; the scrape still answers, with the value the first one set.
    expect(await metrics.render()).toContain('gateway_admin_config_version{service="admin"} 7');
    expect(calls).toBe(2);
  });

  it('keeps two services in one process apart (pnpm start runs all three)', async () => {
    const proxy = createServiceMetrics('proxy');
    const admin = createServiceMetrics('admin');
    proxy.httpRequests.inc({ route: '/v1/chat/completions', method: 'POST', model: 'demo', status: '200', error_code: '' });
    expect(await proxy.render()).toContain('gateway_http_requests_total{route="/v1/chat/completions",method="POST",model="demo",status="200",error_code="",service="proxy"} 1');
    expect(await admin.render()).not.toContain('route="/v1/chat/completions"');
  });
});
