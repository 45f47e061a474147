import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sumSamples } from './prometheus-text.ts';

describe('Prometheus text parsing for tests', () => {
  const text = [
    '# HELP gateway_ledger_rpc_requests_total calls',
    '# TYPE gateway_ledger_rpc_requests_total counter',
    'gateway_ledger_rpc_requests_total{method="Reserve",code="OK",service="ledger"} 3',
    'gateway_ledger_rpc_requests_total{method="Reserve",code="INVALID_ARGUMENT",service="ledger"} 2',
    'gateway_ledger_rpc_requests_total{method="reserve",code="OK",service="ledger"} 5',
    'gateway_ledger_verify_duration_seconds{service="ledger"} 0.25',
    'odd{path="a \\"quoted\\" \\\\ value"} 1',
    '',
  ].join('\n');

  it('reads names, labels and values, and sums the series a label subset selects', () => {
    const samples = parsePrometheusText(text);
    expect(samples).toHaveLength(5);
    expect(sumSamples(samples, 'gateway_ledger_rpc_requests_total', { method: 'Reserve' })).toBe(5);
    expect(sumSamples(samples, 'gateway_ledger_rpc_requests_total', { code: 'OK' })).toBe(8);
    expect(sumSamples(samples, 'gateway_ledger_rpc_requests_total')).toBe(10);
    expect(sumSamples(samples, 'gateway_ledger_rpc_requests_total', { method: 'Settle' })).toBe(0);
    expect(sumSamples(samples, 'gateway_ledger_verify_duration_seconds')).toBe(0.25);
    expect(samples[4]!.labels.path).toBe('a "quoted" \\ value');
  });

  it('refuses a line that is not a sample', () => {
    expect(() => parsePrometheusText('not a sample line at all')).toThrow(/not a Prometheus sample line/);
  });
});
