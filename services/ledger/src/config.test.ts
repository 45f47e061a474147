import { ConfigError } from '@gateway/config';
import { describe, expect, it } from 'vitest';
import { loadLedgerConfig } from './config.ts';

/** The service-identity files every valid configuration names (paths only; nothing is read here). */
const tls = { GRPC_TLS_CA_FILE: '/tls/ca.crt', GRPC_TLS_CERT_FILE: '/tls/tls.crt', GRPC_TLS_KEY_FILE: '/tls/tls.key' };

describe('loadLedgerConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadLedgerConfig(tls)).toEqual({
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: '.data', SHUTDOWN_GRACE_MS: 10_000,
      LEDGER_GRPC_PORT: 50051, LEDGER_HTTP_PORT: 8082, LEDGER_SWEEP_INTERVAL_MS: 5_000, LEDGER_SETTLE_LINGER_MS: 5, LEDGER_DB_POOL_SIZE: 10,
      LEDGER_ALERT_POLL_INTERVAL_MS: 1_000, LEDGER_GRANT_MAX_SHARE_PERCENT: 10, LEDGER_RECALL_POLL_INTERVAL_MS: 100, LEDGER_BUDGET_RECALL_WAIT_MS: 25_000, ...tls, GRPC_INSECURE: false,
      LEDGER_METRICS_PORT: 9103, LEDGER_MIGRATIONS: 'apply', LEDGER_VERIFY_INTERVAL_MS: 300_000, LEDGER_USAGE_PARTITIONS_AHEAD: 3,
      LEDGER_USAGE_RETENTION_MONTHS: 0, LEDGER_REQUEST_LOG_RETENTION_DAYS: 30,
    });
  });

  it('refuses to start with neither certificates nor GRPC_INSECURE=true, naming both options', () => {
    expect(() => loadLedgerConfig({})).toThrow(ConfigError);
    expect(() => loadLedgerConfig({})).toThrow(/GRPC_TLS_CA_FILE.*GRPC_INSECURE=true/);
    expect(loadLedgerConfig({ GRPC_INSECURE: 'true' }).GRPC_INSECURE).toBe(true);
    expect(() => loadLedgerConfig({ GRPC_TLS_CA_FILE: '/tls/ca.crt' })).toThrow(/GRPC_TLS_CERT_FILE[\s\S]*GRPC_TLS_KEY_FILE/);
    expect(() => loadLedgerConfig({ ...tls, GRPC_INSECURE: 'true' })).toThrow(/GRPC_INSECURE/);
  });

  it('reads every variable', () => {
    const config = loadLedgerConfig({
      ...tls, BIND_HOST: '0.0.0.0', LOG_LEVEL: 'debug', DATABASE_URL: 'postgres://u@db:5432/ledger', DATA_DIR: '/var/lib/gw',
      SHUTDOWN_GRACE_MS: '2500', LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '9090', LEDGER_SWEEP_INTERVAL_MS: '250',
      LEDGER_DB_POOL_SIZE: '25', LEDGER_METRICS_PORT: '9464', LEDGER_MIGRATIONS: 'verify', LEDGER_VERIFY_INTERVAL_MS: '60000',
      LEDGER_USAGE_PARTITIONS_AHEAD: '6', LEDGER_USAGE_RETENTION_MONTHS: '13',
      LEDGER_REQUEST_LOG_RETENTION_DAYS: '0', LEDGER_SETTLE_LINGER_MS: '0',
    });
    expect(config).toMatchObject({
      BIND_HOST: '0.0.0.0', DATABASE_URL: 'postgres://u@db:5432/ledger', SHUTDOWN_GRACE_MS: 2500,
      LEDGER_GRPC_PORT: 0, LEDGER_HTTP_PORT: 9090, LEDGER_SWEEP_INTERVAL_MS: 250, LEDGER_DB_POOL_SIZE: 25,
      LEDGER_METRICS_PORT: 9464, LEDGER_MIGRATIONS: 'verify', LEDGER_VERIFY_INTERVAL_MS: 60_000, LEDGER_USAGE_PARTITIONS_AHEAD: 6,
      LEDGER_USAGE_RETENTION_MONTHS: 13, LEDGER_REQUEST_LOG_RETENTION_DAYS: 0, LEDGER_SETTLE_LINGER_MS: 0,
    });
  });

  it('reports every problem at once without echoing a value', () => {
    let caught: unknown;
    try {
      loadLedgerConfig({
        DATABASE_URL: 'mysql://root:hunter2@db', LEDGER_GRPC_PORT: '70000', LEDGER_SWEEP_INTERVAL_MS: '-5', LEDGER_DB_POOL_SIZE: '0',
        LEDGER_REQUEST_LOG_RETENTION_DAYS: '-1', LEDGER_SETTLE_LINGER_MS: '5000',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    for (const variable of ['DATABASE_URL', 'LEDGER_GRPC_PORT', 'LEDGER_SWEEP_INTERVAL_MS', 'LEDGER_DB_POOL_SIZE', 'LEDGER_REQUEST_LOG_RETENTION_DAYS', 'LEDGER_SETTLE_LINGER_MS']) {
      expect(problems).toContain(variable);
    }
    expect((caught as ConfigError).message).not.toContain('hunter2');
  });
});
