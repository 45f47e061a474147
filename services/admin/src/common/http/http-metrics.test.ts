import { describe, expect, it } from 'vitest';
import { createServiceMetrics } from '@gateway/telemetry';
import { createAdminRoutes } from './admin-routes.ts';
import { createHttpObserver } from './http-metrics.ts';

describe('admin HTTP metrics', () => {
  const routes = createAdminRoutes({ allowPrivate: false });
  const answered = { errorCode: '', seconds: 0.01, status: 200 };
  /** The `route` label one answered request is counted under (undefined: not counted). */
  const routeCounted = async (method: string, path: string, status = 200): Promise<string | undefined> => {
    const metrics = createServiceMetrics('admin');
    createHttpObserver(metrics, routes)({ ...answered, method, path, status, errorCode: status >= 400 ? 'not_found' : '' });
    const values = (await metrics.httpRequests.get()).values;
    return values.length === 0 ? undefined : String(values[0]!.labels.route);
  };

  it('names the route template a request is for, as express matches it', async () => {
    expect(await routeCounted('GET', '/admin/v1/organisations/org_123')).toBe('/admin/v1/organisations/:id');
    expect(await routeCounted('GET', '/admin/v1/organisations/org_123/')).toBe('/admin/v1/organisations/:id');
    expect(await routeCounted('HEAD', '/admin/v1/organisations/org_123/balance')).toBe('/admin/v1/organisations/:id/balance');
    expect(await routeCounted('POST', '/admin/v1/organisations')).toBe('/admin/v1/organisations');
    // A model slug may contain slashes: one template still.
    expect(await routeCounted('GET', '/admin/v1/gateway-models/openai/gpt-4o')).toBe('/admin/v1/gateway-models/:slug');
    expect(await routeCounted('DELETE', '/admin/v1/organisations', 404)).toBe('unmatched');
    expect(await routeCounted('GET', '/admin/v1/no-such-thing', 404)).toBe('unmatched');
  });

  it('labels by template, never by path: an unmatched failure is `unmatched`, a success outside the table the dashboard\'s', async () => {
    const metrics = createServiceMetrics('admin');
    const observe = createHttpObserver(metrics, routes);
    observe({ ...answered, method: 'GET', path: '/admin/v1/organisations/org_9' });
    observe({ ...answered, method: 'GET', path: '/secret-looking/path', status: 404, errorCode: 'not_found' });
    observe({ ...answered, method: 'GET', path: '/assets/app.0123456789abcdef.js' });
    observe({ ...answered, method: 'GET', path: '/organisations/org_9' });
    const counted = (await metrics.httpRequests.get()).values.map((value) => value.labels);
    expect(counted).toEqual([
      { route: '/admin/v1/organisations/:id', method: 'GET', model: '', status: '200', error_code: '' },
      { route: 'unmatched', method: 'GET', model: '', status: '404', error_code: 'not_found' },
      { route: '/assets/:asset', method: 'GET', model: '', status: '200', error_code: '' },
      { route: '/*page', method: 'GET', model: '', status: '200', error_code: '' },
    ]);
    expect(JSON.stringify(counted)).not.toContain('org_9');
  });

  it('does not count the probes: /healthz and /readyz (GET or HEAD, a trailing slash, any case) are the kubelet\'s, not requests', async () => {
    const metrics = createServiceMetrics('admin');
    const observe = createHttpObserver(metrics, routes);
    for (const path of ['/healthz', '/readyz', '/healthz/', '/READYZ']) observe({ ...answered, method: 'GET', path });
    observe({ ...answered, method: 'HEAD', path: '/healthz' });
    observe({ ...answered, method: 'GET', path: '/readyz', status: 503, errorCode: 'service_unavailable' });
    expect((await metrics.httpRequests.get()).values).toEqual([]);
    expect((await metrics.httpRequestDuration.get()).values.filter((value) => (value.metricName ?? '').endsWith('_count'))).toEqual([]);
    // A request beside them still counts once, under its template.
    observe({ ...answered, method: 'GET', path: '/admin/v1/organisations/org_9' });
    expect((await metrics.httpRequests.get()).values.map((value) => [value.labels.route, value.value])).toEqual([['/admin/v1/organisations/:id', 1]]);
  });
});
