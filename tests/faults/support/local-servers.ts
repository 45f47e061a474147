/**
 * The fault suite's own PostgreSQL cluster and Redis server: private to the suite, on free
 * loopback ports, so a test may stop and restart them. The machine's shared PostgreSQL (5432)
 * and Redis (6379) are never touched. PostgreSQL refuses to run as root, so when the suite runs
 * as root the cluster belongs to the `postgres` user and every pg command runs through runuser.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/service-processes.ts';
import { killPidSync, onWorkerExit, removeSync, runSync } from './cleanup.ts';

const execFileAsync = promisify(execFile);

/** Where the binaries the suite needs are, and what is missing. */
export interface LocalBinaries {
  /** Folder with initdb, pg_ctl and psql; undefined when none was found. */
  postgresBin: string | undefined;
  /** Path of redis-server; undefined when not found. */
  redisServer: string | undefined;
  /** One line per missing binary (empty when everything is there). */
  problems: string[];
}

function onPath(name: string): string | undefined {
  for (const folder of (process.env.PATH ?? '').split(':')) {
    if (folder !== '' && existsSync(join(folder, name))) return join(folder, name);
  }
  return undefined;
}

/** Finds initdb/pg_ctl/psql (newest /usr/lib/postgresql/<version>/bin, else PATH) and redis-server. */
export function findLocalBinaries(): LocalBinaries {
  let postgresBin: string | undefined;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) postgresBin = join(root, versions[0]!, 'bin');
  }
  if (postgresBin === undefined) {
    const initdb = onPath('initdb');
    if (initdb !== undefined) postgresBin = initdb.slice(0, -'/initdb'.length);
  }
  const redisServer = onPath('redis-server');
  const problems: string[] = [];
  if (postgresBin === undefined) problems.push('initdb/pg_ctl not found (looked in /usr/lib/postgresql/*/bin and PATH)');
  if (redisServer === undefined) problems.push('redis-server not found on PATH');
  if (postgresBin !== undefined && process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) {
    problems.push('running as root, but there is no `postgres` user to own the test cluster');
  }
  return { postgresBin, redisServer, problems };
}

/** A private PostgreSQL cluster the suite may stop and start. */
export interface LocalPostgres {
  port: number;
  /** URL of its `postgres` database (trust authentication on loopback). */
  url: string;
  /** `pg_ctl stop -m fast`: the server ends its connections and stops. */
  stop(): Promise<void>;
  /** Starts it again on the same port and waits until it accepts connections. */
  start(): Promise<void>;
  /** Runs one SQL statement through psql and returns its unaligned, tuples-only output. */
  query(sql: string): Promise<string>;
  /** Stops the server (immediately) and removes its folder. */
  destroy(): Promise<void>;
}

/**
 * initdb into a fresh temporary folder and starts the server on a free loopback port with
 * durability off (fsync, full-page writes: it is a test cluster that lives for one run).
 */
export async function startLocalPostgres(binaries: LocalBinaries): Promise<LocalPostgres> {
  const bin = binaries.postgresBin;
  if (bin === undefined) throw new Error('PostgreSQL binaries are missing');
  const asRoot = process.getuid?.() === 0;
  const folder = mkdtempSync(join(tmpdir(), 'gateway-faults-pg-'));
  const dataDir = join(folder, 'data');
  const logFile = join(folder, 'server.log');
  const port = await freePort();
  // A command of the cluster's owner: the postgres user when we are root, else ourselves.
  const asOwner = (tool: string, args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args]);
  const pgCtl = (args: string[]) => asOwner('pg_ctl', ['-D', dataDir, ...args]);
  const unregister = onWorkerExit(() => {
    const [command, args] = pgCtl(['-m', 'immediate', '-w', 'stop']);
    runSync(command, args);
    removeSync(folder);
  });
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
    chownSync(folder, uid, gid);
  }
  const run = async (command: string, args: string[]) => {
    try {
      return (await execFileAsync(command, args, { cwd: folder, timeout: 60_000 })).stdout;
    } catch (error) {
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-4000) : '';
      throw new Error(`${command} ${args.join(' ')} failed: ${(error as Error).message}\n${log}`, { cause: error });
    }
  };
  const owner = asRoot ? 'postgres' : userInfo().username;
  await run(...asOwner('initdb', ['-D', dataDir, '-U', owner, '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync', '--no-instructions']));
  const serverOptions = [
    `-p ${port}`, `-k ${folder}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', '-c full_page_writes=off',
    '-c synchronous_commit=off', '-c max_connections=200', '-c shared_buffers=64MB',
  ].join(' ');
  const start = async () => { await run(...pgCtl(['-l', logFile, '-o', serverOptions, '-w', '-t', '60', 'start'])); };
  await start();
  const url = `postgres://${owner}@127.0.0.1:${port}/postgres`;
  return {
    port,
    url,
    start,
    async stop() { await run(...pgCtl(['-m', 'fast', '-w', '-t', '60', 'stop'])); },
    async query(sql) {
      return (await run(join(bin, 'psql'), ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql])).trim();
    },
    async destroy() {
      try { await run(...pgCtl(['-m', 'immediate', '-w', 'stop'])); } catch { /* already stopped */ }
      removeSync(folder);
      unregister();
    },
  };
}

/** A private Redis server the suite may stop and start. */
export interface LocalRedis {
  port: number;
  url: string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is saved) and waits for PONG. */
  start(): Promise<void>;
  /** Whether the server process runs. */
  isRunning(): boolean;
  /** Stops it for good. */
  destroy(): Promise<void>;
}

/** Answers whether a Redis server on the port replies PONG to PING, within timeoutMs. */
function redisPing(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => { socket.destroy(); resolve(ok); };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => { reply += data.toString(); if (reply.includes('\r\n')) done(reply.startsWith('+PONG')); });
  });
}

/** Starts `redis-server` on a free loopback port with persistence off. */
export async function startLocalRedis(binaries: LocalBinaries): Promise<LocalRedis> {
  const redisServer = binaries.redisServer;
  if (redisServer === undefined) throw new Error('redis-server is missing');
  const port = await freePort();
  const folder = mkdtempSync(join(tmpdir(), 'gateway-faults-redis-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  const unregister = onWorkerExit(() => { killPidSync(child?.pid); removeSync(folder); });

  const isRunning = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const start = async () => {
    if (isRunning()) throw new Error('redis-server is already running');
    const process_ = spawn(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', folder], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = process_;
    process_.stdout!.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4000); });
    process_.stderr!.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4000); });
    exited = new Promise((resolve) => process_.once('exit', () => resolve()));
    const deadline = Date.now() + 15_000;
    while (!(await redisPing(port))) {
      if (process_.exitCode !== null) throw new Error(`redis-server exited with ${process_.exitCode}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING within 15 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    if (isRunning()) child!.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    isRunning,
    async destroy() { await stop(); removeSync(folder); unregister(); },
  };
}
