import { describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../config.ts';
import { describeRedisTarget, redisTargetOf } from './redis-target.ts';

const base = { GRPC_INSECURE: 'true' };

/** The problems loadProxyConfig reports for an environment (empty when it loads). */
function problemsOf(env: Record<string, string>): string {
  try {
    loadProxyConfig({ ...base, ...env });
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('the Redis target', () => {
  it('reads each of the three shapes, and none', () => {
    expect(redisTargetOf(loadProxyConfig(base))).toBeUndefined();
    expect(redisTargetOf(loadProxyConfig({ ...base, REDIS_URL: 'redis://cache:6379' }))).toEqual({ kind: 'url', url: 'redis://cache:6379' });
    expect(redisTargetOf(loadProxyConfig({
      ...base, REDIS_SENTINELS: 's0:26379, s1:26380,[::1]:26381', REDIS_SENTINEL_MASTER: 'gateway', REDIS_PASSWORD: 'p', REDIS_SENTINEL_PASSWORD: 'sp',
    }))).toEqual({
      kind: 'sentinel', masterName: 'gateway', password: 'p', sentinelPassword: 'sp', tls: false,
      sentinels: [{ host: 's0', port: 26379 }, { host: 's1', port: 26380 }, { host: '::1', port: 26381 }],
    });
    expect(redisTargetOf(loadProxyConfig({ ...base, REDIS_CLUSTER_NODES: 'c0:7000,c1:7001', REDIS_TLS: 'on' }))).toEqual({
      kind: 'cluster', tls: true, nodes: [{ host: 'c0', port: 7000 }, { host: 'c1', port: 7001 }],
    });
  });

  it('refuses unclear or partial shapes with a message naming the variable', () => {
    expect(problemsOf({ REDIS_URL: 'redis://a:6379', REDIS_SENTINELS: 's0:26379', REDIS_SENTINEL_MASTER: 'm' }))
      .toContain('REDIS_SENTINELS: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (found REDIS_URL and REDIS_SENTINELS)');
    expect(problemsOf({ REDIS_SENTINELS: 's0:26379' })).toContain('REDIS_SENTINEL_MASTER: is required with REDIS_SENTINELS');
    expect(problemsOf({ REDIS_SENTINEL_MASTER: 'm' })).toContain('REDIS_SENTINEL_MASTER: needs REDIS_SENTINELS');
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'c0:7000,c1' })).toContain('REDIS_CLUSTER_NODES: must be a comma-separated list of host:port');
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'c0:70000' })).toContain('REDIS_CLUSTER_NODES: must be a comma-separated list of host:port');
    expect(problemsOf({ REDIS_URL: 'redis://a:6379', REDIS_PASSWORD: 'secret-value' })).toContain('REDIS_URL: carries its own password');
    expect(problemsOf({ PROXY_REPLICAS: '0' })).toContain('PROXY_REPLICAS');
  });

  it('never puts a password in an error or a log description', () => {
    expect(problemsOf({ REDIS_URL: 'redis://a:6379', REDIS_PASSWORD: 'secret-value' })).not.toContain('secret-value');
    expect(describeRedisTarget({ kind: 'url', url: 'redis://user:hunter2@cache:6379/0' })).toBe('redis://cache:6379');
    expect(describeRedisTarget({ kind: 'sentinel', masterName: 'm', password: 'hunter2', sentinels: [{ host: 's0', port: 26379 }], tls: false }))
      .toBe('sentinel m via s0:26379');
  });
});
