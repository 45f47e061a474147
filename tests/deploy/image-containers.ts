/**
 * Runs the gateway image's containers for the image smoke (tests/deploy/image-smoke.ts) the way
 * the Kubernetes manifests run their pods: host networking (the machine's PostgreSQL, Redis, fake
 * upstream and local payment provider are on loopback), a read-only root filesystem with a tmpfs
 * /tmp, the image's numeric non-root user, no capabilities, no privilege escalation, the
 * environment from a 0600 file (secrets never on a command line), and the mTLS files mounted
 * read-only at the path the manifests use.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureLocalPki } from '@gateway/grpc';

const run = promisify(execFile);

/** The image's user and group, the manifests' runAsUser/runAsGroup. */
const imageUser = { uid: 1000, gid: 1000 } as const;
/** Where the manifests mount a service's certificate Secret. */
const tlsMountPath = '/var/run/gateway/tls';
/** The manifests' GRPC_TLS_* variables for files mounted at tlsMountPath. */
export const tlsEnv = {
  GRPC_TLS_CA_FILE: `${tlsMountPath}/ca.crt`, GRPC_TLS_CERT_FILE: `${tlsMountPath}/tls.crt`, GRPC_TLS_KEY_FILE: `${tlsMountPath}/tls.key`,
} as const;

/** Runs podman with the arguments; resolves with its stdout (stderr is in the error when it fails). */
export async function podman(args: string[]): Promise<string> {
  const { stdout } = await run('podman', args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** What one container runs: a name, the image's command and its environment. */
export interface ContainerSpec {
  name: string;
  command: string[];
  env: Record<string, string>;
  /** The service role whose certificate is mounted (none for the migration Jobs). */
  tlsRole?: 'ledger' | 'admin' | 'proxy';
}

/**
 * A local CA and one certificate per service (packages/grpc's local PKI, as `pnpm start` makes),
 * laid out like the manifests' cert-manager Secrets: one directory per role holding ca.crt,
 * tls.crt and tls.key, owned by the image's user and readable by it only (the Secret's 0440 with
 * fsGroup 1000 in the manifests). Returns the directory of each role.
 */
export async function writeServiceTls(dir: string): Promise<Record<'ledger' | 'admin' | 'proxy', string>> {
  const pki = await ensureLocalPki(join(dir, 'pki'), { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const roles = ['ledger', 'admin', 'proxy'] as const;
  const result = {} as Record<(typeof roles)[number], string>;
  for (const role of roles) {
    const roleDir = join(dir, `tls-${role}`);
    mkdirSync(roleDir, { recursive: true });
    const files = pki.files[role];
    for (const [from, to] of [[files.caFile, 'ca.crt'], [files.certFile, 'tls.crt'], [files.keyFile, 'tls.key']] as const) {
      copyFileSync(from, join(roleDir, to));
      chownSync(join(roleDir, to), imageUser.uid, imageUser.gid);
      chmodSync(join(roleDir, to), 0o400);
    }
    chownSync(roleDir, imageUser.uid, imageUser.gid);
    chmodSync(roleDir, 0o500);
    result[role] = roleDir;
  }
  return result;
}

/** The `podman run` arguments of a container, its environment written to a 0600 file under `dir`. */
export function runArguments(image: string, spec: ContainerSpec, dir: string, tlsDirs: Record<string, string>, detached: boolean): string[] {
  const envFile = join(dir, `${spec.name}.env`);
  writeFileSync(envFile, Object.entries(spec.env).map(([name, value]) => `${name}=${value}\n`).join(''), { mode: 0o600 });
  return [
    'run', ...(detached ? ['--detach'] : ['--rm']), '--name', spec.name, '--pull=never',
    '--network', 'host', '--read-only', '--tmpfs', '/tmp:rw,size=64m,mode=1777',
    '--user', `${imageUser.uid}:${imageUser.gid}`, '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
    '--env-file', envFile,
    ...(spec.tlsRole === undefined ? [] : ['--volume', `${tlsDirs[spec.tlsRole]}:${tlsMountPath}:ro`]),
    image, ...spec.command,
  ];
}

/** Polls `url` until it answers 200; resolves with the time that took (ms), rejects after `timeoutMs`. */
export async function waitForOk(url: string, timeoutMs: number, startedAtMs: number): Promise<number> {
  const deadline = startedAtMs + timeoutMs;
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then((response) => response.ok, () => false);
    if (ok) return Date.now() - startedAtMs;
    if (Date.now() > deadline) throw new Error(`${url} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A container's state and the tail of its log, for a failure's message. */
export async function describeContainer(name: string): Promise<string> {
  const state = await podman(['inspect', '--format', '{{.State.Status}} exit={{.State.ExitCode}}', name]).catch((error: Error) => error.message);
  const logs = await run('podman', ['logs', '--tail', '40', name]).then(({ stdout, stderr }) => stdout + stderr, (error: Error) => error.message);
  return `--- ${name}: ${state.trim()}\n${logs}`;
}
