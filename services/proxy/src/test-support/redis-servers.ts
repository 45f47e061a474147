import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gateway/testkit';
import { Redis } from 'ioredis';

/**
 * Redis servers and Sentinels of a test's own, on free ports, in a temporary directory: never the
 * machine's shared Redis. Each is a `redis-server` process the test starts and stops.
 */

/** Whether `redis-server` is on this machine (under CI=true its absence fails the test instead of skipping it). */
export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** One running redis-server (a server or a Sentinel). */
export interface RedisProcess {
  port: number;
  /** A connection to it, for the test's own commands. */
  client: Redis;
  /** SIGKILL: the process dies without a word (a crashed node). */
  kill(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

/** Waits until a connection to the port answers PING. */
async function answering(port: number, processHandle: ChildProcess, output: () => string): Promise<Redis> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  // Refused connections while it starts (and after a kill) are expected: the poll below decides.
  client.on('error', () => undefined);
  for (;;) {
    if (processHandle.exitCode !== null) throw new Error(`redis-server on ${String(port)} exited: ${output()}`);
    try {
      if (client.status === 'wait') await client.connect();
      if ((await client.ping()) === 'PONG') return client;
    } catch {
      // Not listening yet: wait for the next poll.
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts redis-server with `lines` as its config file (written to a fresh temp dir). */
async function startWithConfig(lines: (port: number, dir: string) => string[], extraArgs: string[] = [], fixedPort?: number): Promise<RedisProcess> {
  const port = fixedPort ?? await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gw-redis-'));
  const configFile = join(dir, 'redis.conf');
  writeFileSync(configFile, [`port ${String(port)}`, 'bind 127.0.0.1', `dir ${dir}`, ...lines(port, dir)].join('\n') + '\n');
  const child = spawn('redis-server', [configFile, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4000); });
  child.stderr.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4000); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const client = await answering(port, child, () => output);
  const end = async (signal: NodeJS.Signals) => {
    client.disconnect();
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    port,
    client,
    kill: () => end('SIGKILL'),
    stop: async () => {
      await end('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Redis server without persistence; `replicaOf` makes it a replica of that port; `port` restarts one where it was. */
export function startRedisServer(options: { replicaOf?: number; port?: number } = {}): Promise<RedisProcess> {
  return startWithConfig(() => [
    'save ""', 'appendonly no',
    ...(options.replicaOf === undefined ? [] : [`replicaof 127.0.0.1 ${String(options.replicaOf)}`]),
  ], [], options.port);
}

/** A Sentinel watching the master at `masterPort` as `masterName` (quorum 2, down after 1 s). */
export function startSentinel(masterName: string, masterPort: number): Promise<RedisProcess> {
  return startWithConfig(() => [
    `sentinel monitor ${masterName} 127.0.0.1 ${String(masterPort)} 2`,
    `sentinel down-after-milliseconds ${masterName} 1000`,
    `sentinel failover-timeout ${masterName} 10000`,
    `sentinel parallel-syncs ${masterName} 1`,
  ], ['--sentinel']);
}

/** The port of the master the Sentinel names now. */
export async function sentinelMasterPort(sentinel: RedisProcess, masterName: string): Promise<number> {
  const reply = await sentinel.client.call('SENTINEL', 'get-master-addr-by-name', masterName) as [string, string] | null;
  return reply === null ? 0 : Number(reply[1]);
}

/** Waits until a replica has every write its master acknowledged (their replication offsets agree). */
export async function replicaCaughtUp(master: RedisProcess, replica: RedisProcess): Promise<void> {
  const offsetOf = async (node: RedisProcess, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(await node.client.info('replication'))?.[1] ?? -1);
  for (;;) {
    const [masterOffset, replicaOffset] = await Promise.all([offsetOf(master, 'master_repl_offset'), offsetOf(replica, 'slave_repl_offset')]);
    if (masterOffset > 0 && masterOffset === replicaOffset) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until every Sentinel knows the master's replica and the other Sentinels: a failover can be agreed. */
export async function sentinelsAgree(sentinels: readonly RedisProcess[], masterName: string): Promise<void> {
  for (;;) {
    const views = await Promise.all(sentinels.map(async (sentinel) => {
      const replicas = await sentinel.client.call('SENTINEL', 'replicas', masterName) as unknown[];
      const peers = await sentinel.client.call('SENTINEL', 'sentinels', masterName) as unknown[];
      return replicas.length === 1 && peers.length === sentinels.length - 1;
    }));
    if (views.every(Boolean)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
