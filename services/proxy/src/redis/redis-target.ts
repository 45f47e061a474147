import { z } from '@gateway/config';

/**
 * Where the proxy's shared Redis is, in one of three shapes (docs/deploy.md "Redis: Sentinel and
 * Cluster"): one server (REDIS_URL), a Sentinel-watched master (REDIS_SENTINELS +
 * REDIS_SENTINEL_MASTER) or a Cluster (REDIS_CLUSTER_NODES). The environment's variables, their
 * cross-checks and the parsed target live here; redis-client.ts builds the client from the target.
 */

/** One `host:port` of a list; IPv6 in brackets (`[::1]:26379`). */
const hostPortPattern = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** A comma-separated list of `host:port`, each port 1–65535. */
const hostPortList = z.string().refine(
  (value) => value.split(',').every((entry) => {
    const match = hostPortPattern.exec(entry.trim());
    return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65535;
  }),
  'must be a comma-separated list of host:port (e.g. redis-sentinel-0:26379,redis-sentinel-1:26379)',
);

/** The Redis variables of the proxy's environment (spread into its schema). */
export const redisEnv = {
  /** One Redis server: shared RPM pools and stored Responses. At most one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES. */
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  /** The Sentinels watching the master, `host:port,...` (with REDIS_SENTINEL_MASTER); ioredis asks them for the master and follows failovers. */
  REDIS_SENTINELS: hostPortList.optional(),
  /** The master's name in the Sentinels' configuration (`sentinel monitor <name> ...`). */
  REDIS_SENTINEL_MASTER: z.string().min(1).max(200).optional(),
  /** Password of the Sentinels themselves (`requirepass` in sentinel.conf), if any. */
  REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  /** Cluster seed nodes, `host:port,...`; ioredis discovers the rest. Every key the proxy uses hashes to one slot per command. */
  REDIS_CLUSTER_NODES: hostPortList.optional(),
  /** Password of the Redis servers in Sentinel or Cluster mode (REDIS_URL carries its own). */
  REDIS_PASSWORD: z.string().min(1).optional(),
  /** `on`: TLS to the Redis servers in Sentinel or Cluster mode (REDIS_URL says so with rediss://). */
  REDIS_TLS: z.enum(['on', 'off']).default('off'),
};

/** The Redis variables as parsed. */
export type RedisEnv = z.infer<z.ZodObject<typeof redisEnv>>;

/** A host and port of a list variable. */
interface HostPort {
  host: string;
  port: number;
}

/** Where the shared Redis is; `undefined` from redisTargetOf means no Redis (one replica, in-process pools). */
export type RedisTarget =
  | { kind: 'url'; url: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; masterName: string; password?: string; sentinelPassword?: string; tls: boolean }
  | { kind: 'cluster'; nodes: HostPort[]; password?: string; tls: boolean };

/** Parses a checked `host:port,...` list. */
function parseHostPorts(list: string): HostPort[] {
  return list.split(',').map((entry) => {
    const match = hostPortPattern.exec(entry.trim())!;
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
  });
}

/** Cross-checks of the Redis variables (a zod superRefine): one shape at most, and each shape whole. */
export function checkRedisEnv(config: RedisEnv, context: z.RefinementCtx): void {
  const shapes = (['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const).filter((name) => config[name] !== undefined);
  if (shapes.length > 1) {
    context.addIssue({ code: 'custom', path: [shapes[1]!], message: `set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (found ${shapes.join(' and ')})` });
  }
  if (config.REDIS_SENTINELS !== undefined && config.REDIS_SENTINEL_MASTER === undefined) {
    context.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_MASTER'], message: 'is required with REDIS_SENTINELS (the master name the Sentinels monitor)' });
  }
  if (config.REDIS_SENTINEL_MASTER !== undefined && config.REDIS_SENTINELS === undefined) {
    context.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_MASTER'], message: 'needs REDIS_SENTINELS (the Sentinels to ask for it)' });
  }
  if (config.REDIS_SENTINEL_PASSWORD !== undefined && config.REDIS_SENTINELS === undefined) {
    context.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_PASSWORD'], message: 'needs REDIS_SENTINELS' });
  }
  if (config.REDIS_URL !== undefined && (config.REDIS_PASSWORD !== undefined || config.REDIS_TLS === 'on')) {
    context.addIssue({ code: 'custom', path: ['REDIS_URL'], message: 'carries its own password and TLS (redis://:password@host, rediss://): unset REDIS_PASSWORD and REDIS_TLS' });
  }
}

/** The target the variables name (checked by checkRedisEnv), or undefined when none is set. */
export function redisTargetOf(config: RedisEnv): RedisTarget | undefined {
  const tls = config.REDIS_TLS === 'on';
  const password = config.REDIS_PASSWORD === undefined ? {} : { password: config.REDIS_PASSWORD };
  if (config.REDIS_URL !== undefined) return { kind: 'url', url: config.REDIS_URL };
  if (config.REDIS_SENTINELS !== undefined) {
    return {
      kind: 'sentinel', sentinels: parseHostPorts(config.REDIS_SENTINELS), masterName: config.REDIS_SENTINEL_MASTER!, tls, ...password,
      ...(config.REDIS_SENTINEL_PASSWORD === undefined ? {} : { sentinelPassword: config.REDIS_SENTINEL_PASSWORD }),
    };
  }
  if (config.REDIS_CLUSTER_NODES !== undefined) return { kind: 'cluster', nodes: parseHostPorts(config.REDIS_CLUSTER_NODES), tls, ...password };
  return undefined;
}

/** A description of a target for logs: addresses and the master name, never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  const list = (entries: HostPort[]) => entries.map((entry) => `${entry.host}:${String(entry.port)}`).join(',');
  switch (target.kind) {
    case 'url': {
      const url = new URL(target.url);
      return `${url.protocol}//${url.host}`;
    }
    case 'sentinel': return `sentinel ${target.masterName} via ${list(target.sentinels)}`;
    case 'cluster': return `cluster via ${list(target.nodes)}`;
  }
}
