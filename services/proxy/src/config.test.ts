import { describe, expect, it } from 'vitest';
import { ConfigError } from '@gateway/config';
import { tracingShutdownTimeoutMs } from '@gateway/telemetry';
import { loadProxyConfig, outboxHandOverTimeoutMs, outboxStreamKey, proxyDrainBoundMs, proxyRequestBoundMs } from './config.ts';

/** The service-identity files every valid configuration names (paths only; nothing is read here). */
const tls = { GRPC_TLS_CA_FILE: '/tls/ca.crt', GRPC_TLS_CERT_FILE: '/tls/tls.crt', GRPC_TLS_KEY_FILE: '/tls/tls.key' };

describe('loadProxyConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadProxyConfig(tls);
    expect(config).toMatchObject({
      ...tls, GRPC_INSECURE: false,
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: 312_000, PROXY_HTTP_PORT: 8080, PROXY_METRICS_PORT: 9101,
      ADMIN_GRPC_URL: '127.0.0.1:50052', LEDGER_GRPC_URL: '127.0.0.1:50051', PROXY_REDIS_PREFIX: 'gw:rpm:',
      PROXY_CONFIG_STALENESS_MS: 30_000, RESERVE_TTL_MS: 600_000, PROXY_MAX_BODY_BYTES: 16_777_216, PROXY_MAX_INFLIGHT_BODY_BYTES: 67_108_864,
      UPSTREAM_CONNECT_TIMEOUT_MS: 10_000, UPSTREAM_FIRST_BYTE_TIMEOUT_MS: 60_000, UPSTREAM_TOTAL_TIMEOUT_MS: 300_000,
      LEDGER_CALL_TIMEOUT_MS: 5_000, UPSTREAM_IDLE_TIMEOUT_MS: 60_000, PROXY_CHECKPOINT_INTERVAL_MS: 2_000, PROXY_STREAM_LEASE_MS: 15_000,
      PROXY_SETTLE_OUTBOX_MAX: 10_000, PROXY_OUTBOX_ADOPT_INTERVAL_MS: 1_000, PROXY_OUTBOX_CLAIM_IDLE_MS: 30_000,
      PROXY_SETTLE_RETRY_INITIAL_MS: 100, PROXY_SETTLE_RETRY_MAX_MS: 3_000, PROXY_REQUEST_LOG: 'on',
      PROXY_MAX_MESSAGE_CHARS: 524_288, PROXY_CONFIG_MAX_MESSAGE_BYTES: 67_108_864,
    });
    expect(config.REDIS_URL).toBeUndefined();
    expect(config.PROXY_ID).toContain(String(process.pid));
  });

  it('reads the routing and outlier settings with their defaults, and refuses bounds that contradict each other', () => {
    expect(loadProxyConfig(tls)).toMatchObject({
      PROXY_ROUTING_MAX_ATTEMPTS: 3, PROXY_ROUTING_DEADLINE_MS: 60_000, PROXY_ROUTING_ATTEMPT_TIMEOUT_MS: 20_000,
      PROXY_OUTLIER_CONSECUTIVE_FAILURES: 5, PROXY_OUTLIER_BASE_EJECTION_MS: 30_000, PROXY_OUTLIER_MAX_EJECTION_MS: 300_000,
    });
    expect(() => loadProxyConfig({ ...tls, PROXY_ROUTING_ATTEMPT_TIMEOUT_MS: '70000' })).toThrow(/PROXY_ROUTING_ATTEMPT_TIMEOUT_MS/);
    expect(() => loadProxyConfig({ ...tls, PROXY_OUTLIER_MAX_EJECTION_MS: '1000' })).toThrow(/PROXY_OUTLIER_MAX_EJECTION_MS/);
    expect(() => loadProxyConfig({ ...tls, PROXY_ROUTING_MAX_ATTEMPTS: '0' })).toThrow(/PROXY_ROUTING_MAX_ATTEMPTS/);
  });

  it('refuses to start with neither certificates nor GRPC_INSECURE=true, naming both options', () => {
    expect(() => loadProxyConfig({})).toThrow(/GRPC_TLS_CA_FILE.*GRPC_INSECURE=true/);
    expect(loadProxyConfig({ GRPC_INSECURE: 'true' }).GRPC_INSECURE).toBe(true);
  });

  it('reports every problem at once without echoing values', () => {
    let error: unknown;
    try {
      loadProxyConfig({
        ...tls, PROXY_HTTP_PORT: '99999', REDIS_URL: 'http://user:hunter2@cache', RESERVE_TTL_MS: '-5', ADMIN_GRPC_URL: 'no port',
        PROXY_CONFIG_MAX_MESSAGE_BYTES: '1000', PROXY_MAX_BODY_BYTES: String(512 * 1024 * 1024),
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'ADMIN_GRPC_URL', 'PROXY_CONFIG_MAX_MESSAGE_BYTES', 'PROXY_HTTP_PORT', 'PROXY_MAX_BODY_BYTES', 'REDIS_URL', 'RESERVE_TTL_MS',
    ]);
    expect((error as ConfigError).message).not.toContain('hunter2');
  });
});

describe('PROXY_MAX_INFLIGHT_BODY_BYTES', () => {
  it('must hold at least one body of PROXY_MAX_BODY_BYTES (a chunked body takes the whole limit)', () => {
    expect(loadProxyConfig({ ...tls, PROXY_MAX_BODY_BYTES: '1000', PROXY_MAX_INFLIGHT_BODY_BYTES: '1000' }).PROXY_MAX_INFLIGHT_BODY_BYTES).toBe(1000);
    expect(() => loadProxyConfig({ ...tls, PROXY_MAX_BODY_BYTES: '1000', PROXY_MAX_INFLIGHT_BODY_BYTES: '999' }))
      .toThrow(/PROXY_MAX_INFLIGHT_BODY_BYTES.*at least PROXY_MAX_BODY_BYTES/);
    expect(() => loadProxyConfig({ ...tls, PROXY_MAX_BODY_BYTES: String(128 * 1024 * 1024) })).toThrow(/PROXY_MAX_INFLIGHT_BODY_BYTES/);
  });
});

describe('PROXY_STREAM_LEASE_MS', () => {
  it('must outlast two checkpoint intervals and a call timeout, so a live stream renews its lease before it ends (EXPIRY)', () => {
    const timing = { PROXY_CHECKPOINT_INTERVAL_MS: '1000', LEDGER_CALL_TIMEOUT_MS: '2000' };
    expect(loadProxyConfig({ ...tls, ...timing, PROXY_STREAM_LEASE_MS: '4000' }).PROXY_STREAM_LEASE_MS).toBe(4000);
    expect(() => loadProxyConfig({ ...tls, ...timing, PROXY_STREAM_LEASE_MS: '3999' }))
      .toThrow(/PROXY_STREAM_LEASE_MS.*2 × PROXY_CHECKPOINT_INTERVAL_MS \+ LEDGER_CALL_TIMEOUT_MS/);
  });
});

describe('the shared outbox stream', () => {
  it('lives under PROXY_REDIS_PREFIX unless named, so proxies kept apart in one Redis keep their outboxes apart', () => {
    expect(outboxStreamKey(loadProxyConfig(tls))).toBe('gw:rpm:outbox');
    expect(outboxStreamKey(loadProxyConfig({ ...tls, PROXY_REDIS_PREFIX: 'staging:rpm:' }))).toBe('staging:rpm:outbox');
    expect(outboxStreamKey(loadProxyConfig({ ...tls, PROXY_OUTBOX_STREAM: 'settles' }))).toBe('settles');
  });
});

describe('SHUTDOWN_GRACE_MS', () => {
  it('is by default the longest request the limits allow: the upstream total timeout, two Reserve calls and the recall wait', () => {
    // 300 s upstream + 2 × 5 s ledger calls + 2 s recall wait.
    expect(loadProxyConfig(tls).SHUTDOWN_GRACE_MS).toBe(312_000);
    const short = { UPSTREAM_TOTAL_TIMEOUT_MS: '5000', LEDGER_CALL_TIMEOUT_MS: '1000', PROXY_RECALL_WAIT_MS: '500' };
    expect(loadProxyConfig({ ...tls, ...short }).SHUTDOWN_GRACE_MS).toBe(7_500);
    expect(proxyRequestBoundMs({ UPSTREAM_TOTAL_TIMEOUT_MS: 5_000, LEDGER_CALL_TIMEOUT_MS: 1_000, PROXY_RECALL_WAIT_MS: 500 })).toBe(7_500);
    // A longer upstream limit lengthens the grace with it: no second number to keep in step.
    expect(loadProxyConfig({ ...tls, UPSTREAM_TOTAL_TIMEOUT_MS: '600000' }).SHUTDOWN_GRACE_MS).toBe(612_000);
  });

  it('takes an explicit value (a shorter one cuts streams that outlast it)', () => {
    expect(loadProxyConfig({ ...tls, SHUTDOWN_GRACE_MS: '1500' }).SHUTDOWN_GRACE_MS).toBe(1_500);
    expect(() => loadProxyConfig({ ...tls, SHUTDOWN_GRACE_MS: '0' })).toThrow(/SHUTDOWN_GRACE_MS/);
  });
});

describe('proxyDrainBoundMs', () => {
  it('counts every stop step after SIGTERM: grace, cut streams\' Settles, outbox hand-over and flush, grant close, last span export', () => {
    // 312 s grace + (3 × 5 s + 1 s) Settles + 1 s hand-over to Redis + 2 s + 5 s AdjustGrant close + 5 s tracing export.
    expect(tracingShutdownTimeoutMs).toBe(5_000);
    expect(outboxHandOverTimeoutMs).toBe(1_000);
    expect(proxyDrainBoundMs({ SHUTDOWN_GRACE_MS: 312_000, LEDGER_CALL_TIMEOUT_MS: 5_000 })).toBe(341_000);
    expect(proxyDrainBoundMs({ SHUTDOWN_GRACE_MS: 0, LEDGER_CALL_TIMEOUT_MS: 1_000 })).toBe(4_000 + 1_000 + 2_000 + 1_000 + 5_000);
  });
});
