/**
 * compose.yaml agrees with the Kubernetes manifests (deploy/kubernetes/base) where one machine
 * should run what the cluster runs: each service's and each migration Job's command; the same
 * environment variables, which the service's config schema reads, with the manifests' literal
 * values (ports, grace, verify-only migrations, heap settings) and the manifests' Secret keys
 * taken from .env (required ones refused when empty, optional ones passed empty, which the
 * services read as unset); the manifests' non-root user, read-only root filesystem, dropped
 * capabilities and /tmp; a health check on the readiness probe's path and port; published ports
 * that are the containers' http ports; a stop grace no shorter than the pods'; and mTLS files in
 * the pki volume, whose mount point the Dockerfile prepares for the non-root user. The last block
 * shows each check catching its mistake.
 */
import { readFileSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { adminConfigSchema } from '@gateway/admin';
import { ledgerConfigSchema } from '@gateway/ledger';
import { proxyConfigSchema } from '@gateway/proxy';

const repoRoot = new URL('../../', import.meta.url);
const roles = ['ledger', 'admin', 'proxy'] as const;
type Role = (typeof roles)[number];

/** A compose service, the parts these checks read. */
interface ComposeService {
  image?: string; command?: string[]; user?: string; read_only?: boolean; tmpfs?: string[]; cap_drop?: string[]; security_opt?: string[];
  environment?: Record<string, string>; volumes?: string[]; ports?: string[]; stop_grace_period?: string;
  healthcheck?: { test: string[] };
}
/** A Kubernetes env entry. */
interface EnvEntry { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string; optional?: boolean }; fieldRef?: unknown } }

/** compose.yaml with its `<<` merge keys applied. */
function readCompose(text: string): Record<string, ComposeService> {
  return (parse(text, { merge: true }) as { services: Record<string, ComposeService> }).services;
}

/** The first container and pod spec of the workload named `name` in a base manifest file. */
function podOf(file: string, name: string): { pod: any; container: any } {
  const objects = parseAllDocuments(readFileSync(new URL(`deploy/kubernetes/base/${file}`, repoRoot), 'utf8')).map((document) => document.toJS() as any);
  const workload = objects.find((object) => (object.kind === 'Deployment' || object.kind === 'Job') && object.metadata.name === name);
  if (workload === undefined) throw new Error(`no workload ${name} in ${file}`);
  return { pod: workload.spec.template.spec, container: workload.spec.template.spec.containers[0] };
}

/** Each service's environment schema: the variables it reads. */
const schemaNames: Record<Role, string[]> = {
  ledger: Object.keys(ledgerConfigSchema.shape), admin: Object.keys(adminConfigSchema.shape), proxy: Object.keys(proxyConfigSchema.shape),
};
/** Read by Node and glibc, not by a service's schema (the proxy's heap and malloc arenas). */
const runtimeVariables = ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'];
/** Secrets compose makes from its own datastores rather than taking from .env. */
const composedSecrets = ['DATABASE_URL', 'REDIS_URL'];
const pkiMount = '/var/lib/gateway/pki';
const dockerfileText = readFileSync(new URL('deploy/Dockerfile', repoRoot), 'utf8');

/** Where compose.yaml and the manifests disagree, as sentences (empty: they agree). */
function composeProblems(services: Record<string, ComposeService>): string[] {
  const problems: string[] = [];
  const gatewayImage = services.proxy?.image;
  for (const job of ['ledger-migrate', 'admin-migrate']) {
    const { container } = podOf('migrations/migrate-jobs.yaml', job);
    const service = services[job];
    if (JSON.stringify(service?.command) !== JSON.stringify(container.command)) problems.push(`${job}: command ${JSON.stringify(service?.command)} is not the Job's ${JSON.stringify(container.command)}`);
    const names = Object.keys(service?.environment ?? {}).sort().join();
    if (names !== (container.env as EnvEntry[]).map((entry) => entry.name).sort().join()) problems.push(`${job}: environment ${names} is not the Job's`);
  }
  for (const role of roles) {
    const { pod, container } = podOf(`${role}.yaml`, role);
    const service = services[role];
    if (service === undefined) { problems.push(`${role}: no such compose service`); continue; }
    if (JSON.stringify(service.command) !== JSON.stringify(container.command)) problems.push(`${role}: command ${JSON.stringify(service.command)} is not the manifest's ${JSON.stringify(container.command)}`);
    const environment = service.environment ?? {};
    const manifestEnv = container.env as EnvEntry[];
    for (const name of Object.keys(environment)) {
      if (!manifestEnv.some((entry) => entry.name === name)) problems.push(`${role}: ${name} is not in the manifest`);
      if (!schemaNames[role].includes(name) && !runtimeVariables.includes(name)) problems.push(`${role}: ${name} is read by nothing`);
    }
    for (const entry of manifestEnv) {
      const value = environment[entry.name];
      if (value === undefined) { problems.push(`${role}: ${entry.name} is missing`); continue; }
      const secret = entry.valueFrom?.secretKeyRef;
      if (entry.value !== undefined && !entry.name.startsWith('GRPC_TLS_') && !(entry.name in valuesOfTheMachine) && value !== entry.value) problems.push(`${role}: ${entry.name}=${value}, the manifest says ${entry.value}`);
      if (secret !== undefined && !composedSecrets.includes(secret.key)) {
        const wanted = secret.optional === true ? new RegExp(`^\\$\\{${secret.key}\\}$`) : new RegExp(`^\\$\\{${secret.key}:\\?`);
        if (!wanted.test(value)) problems.push(`${role}: ${entry.name}=${value} should be ${secret.optional === true ? `\${${secret.key}}` : `\${${secret.key}:?…}`} from .env`);
      }
    }
    for (const [name, file] of [['GRPC_TLS_CA_FILE', 'ca.crt'], ['GRPC_TLS_CERT_FILE', `${role}.crt`], ['GRPC_TLS_KEY_FILE', `${role}.key`]] as const) {
      if (environment[name] !== `${pkiMount}/${file}`) problems.push(`${role}: ${name}=${environment[name]} is not ${pkiMount}/${file}`);
    }
    if (!(service.volumes ?? []).includes(`pki:${pkiMount}:ro`)) problems.push(`${role}: the pki volume is not mounted read-only at ${pkiMount}`);
    if (service.image !== gatewayImage) problems.push(`${role}: image ${service.image} is not the proxy's ${gatewayImage}`);
    if (service.user !== `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`) problems.push(`${role}: user ${service.user} is not the manifest's runAsUser:runAsGroup`);
    if (service.read_only !== container.securityContext.readOnlyRootFilesystem) problems.push(`${role}: read_only ${service.read_only} differs from readOnlyRootFilesystem`);
    if (JSON.stringify(service.cap_drop) !== JSON.stringify(container.securityContext.capabilities.drop)) problems.push(`${role}: cap_drop ${JSON.stringify(service.cap_drop)} differs`);
    if (!(service.security_opt ?? []).includes('no-new-privileges')) problems.push(`${role}: privilege escalation is allowed`);
    if (!(service.tmpfs ?? []).includes('/tmp')) problems.push(`${role}: no tmpfs /tmp`);
    const httpPort = container.ports.find((port: { name: string }) => port.name === 'http').containerPort as number;
    const probe = `http://127.0.0.1:${httpPort}${container.readinessProbe.httpGet.path as string}`;
    if (!(service.healthcheck?.test.join(' ') ?? '').includes(`fetch('${probe}')`)) problems.push(`${role}: the health check does not ask ${probe}`);
    const published = (service.ports ?? []).map((port) => Number(port.split(':').at(-1)));
    if (published.some((port) => port !== httpPort)) problems.push(`${role}: publishes ${published.join()}, not only its http port ${httpPort}`);
    if (Number.parseInt(service.stop_grace_period ?? '10', 10) < pod.terminationGracePeriodSeconds) problems.push(`${role}: stop_grace_period ${service.stop_grace_period} is shorter than terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}`);
  }
  if (!/mkdir -p \/var\/lib\/gateway\/pki && chown 1000:1000 \/var\/lib\/gateway\/pki/.test(dockerfileText)) problems.push(`the Dockerfile does not prepare ${pkiMount} for uid 1000`);
  return problems;
}

const composeText = readFileSync(new URL('compose.yaml', repoRoot), 'utf8');

/**
 * Variables whose value describes where the stack runs, not how it behaves: compose sets them for
 * one machine with nothing in front (the name must still be there; the value may differ).
 */
const valuesOfTheMachine: Record<string, string> = {
  ADMIN_PUBLIC_URL: 'the address people open: the published admin port, not the Ingress host',
  ADMIN_PROXY_PUBLIC_URL: 'the API\'s address customers call: the published proxy port, not the Ingress host',
  ADMIN_TRUST_PROXY: 'no ingress controller in front, so no forwarded header is believed',
  PROXY_REPLICAS: 'one proxy: the overlays copy the autoscaler\'s ceiling, compose runs a single replica',
};

describe('compose.yaml', () => {
  it('runs the manifests\' commands, environment, user and filesystem, probes and ports', () => {
    expect(composeProblems(readCompose(composeText))).toEqual([]);
  });

  it('publishes only the proxy and the admin, and runs no gateway service as root or writable', () => {
    const services = readCompose(composeText);
    expect(Object.entries(services).filter(([, service]) => service.ports !== undefined).map(([name]) => name).sort()).toEqual(['admin', 'proxy']);
    const gateway = Object.entries(services).filter(([, service]) => service.image === services.proxy!.image);
    expect(gateway.map(([name]) => name).sort()).toEqual(['admin', 'admin-migrate', 'ledger', 'ledger-migrate', 'pki', 'proxy']);
    for (const [name, service] of gateway) expect([name, service.user, service.read_only], name).toEqual([name, '1000:1000', true]);
  });

  it('catches each disagreement it is for', () => {
    const mutated = (edit: (services: Record<string, ComposeService>) => void): string[] => {
      const services = readCompose(composeText);
      edit(services);
      return composeProblems(services);
    };
    expect(mutated((s) => { s.proxy!.command = ['node', 'services/proxy/src/other.ts']; })).toEqual([expect.stringMatching(/^proxy: command/)]);
    expect(mutated((s) => { s['admin-migrate']!.command = ['node', 'services/ledger/src/migrate-cli.ts']; })).toEqual([expect.stringMatching(/^admin-migrate: command/)]);
    expect(mutated((s) => { delete s.ledger!.environment!.LEDGER_MIGRATIONS; })).toEqual(['ledger: LEDGER_MIGRATIONS is missing']);
    expect(mutated((s) => { s.ledger!.environment!.LEDGER_MIGRATIONS = 'apply'; })).toEqual(['ledger: LEDGER_MIGRATIONS=apply, the manifest says verify']);
    expect(mutated((s) => { s.proxy!.environment!.PROXY_RATE = '1'; })).toEqual(['proxy: PROXY_RATE is not in the manifest', 'proxy: PROXY_RATE is read by nothing']);
    expect(mutated((s) => { s.admin!.environment!.ADMIN_ENCRYPTION_KEY = '${ADMIN_ENCRYPTION_KEY}'; })).toEqual([expect.stringMatching(/^admin: ADMIN_ENCRYPTION_KEY=.*should be/)]);
    expect(mutated((s) => { s.admin!.environment!.SMTP_URL = 'smtp://inline'; })).toEqual([expect.stringMatching(/^admin: SMTP_URL=.*should be/)]);
    expect(mutated((s) => { s.admin!.environment!.GRPC_TLS_KEY_FILE = `${pkiMount}/proxy.key`; })).toEqual([expect.stringMatching(/^admin: GRPC_TLS_KEY_FILE/)]);
    expect(mutated((s) => { s.ledger!.user = '0:0'; })).toEqual([expect.stringMatching(/^ledger: user/)]);
    expect(mutated((s) => { s.ledger!.read_only = false; })).toEqual([expect.stringMatching(/^ledger: read_only/)]);
    expect(mutated((s) => { s.admin!.cap_drop = []; })).toEqual([expect.stringMatching(/^admin: cap_drop/)]);
    expect(mutated((s) => { s.admin!.healthcheck!.test = ['CMD-SHELL', "node -e \"fetch('http://127.0.0.1:8081/healthz')\""]; })).toEqual([expect.stringMatching(/^admin: the health check/)]);
    expect(mutated((s) => { s.ledger!.ports = ['127.0.0.1:50051:50051']; })).toEqual([expect.stringMatching(/^ledger: publishes/)]);
    expect(mutated((s) => { s.proxy!.stop_grace_period = '30s'; })).toEqual([expect.stringMatching(/^proxy: stop_grace_period/)]);
  });
});
