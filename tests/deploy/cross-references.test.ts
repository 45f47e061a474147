/**
 * Cross-references between the objects of every rendered overlay, the services' config schemas
 * and the repository: what `kubectl apply` would accept but would not run. Selectors match the
 * labels they mean (Deployments, Services, PDBs, the HPA's target, the ServiceMonitor, topology
 * spread) and nothing else; every variable a service's config schema requires is set and every
 * literal parses; every Secret key referenced exists in secrets.example.yaml and no secret is
 * inlined; probe ports name container ports; each pod's termination grace exceeds its drain
 * bound; metrics ports agree with *_METRICS_PORT; each release has a migration Job per service
 * named after its image tag while the Deployments only verify.
 * Each check returns problems, and the last block proves each catches its mistake.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { adminConfigSchema } from '@gateway/admin';
import { ledgerConfigSchema } from '@gateway/ledger';
import { proxyConfigSchema, proxyDrainBoundMs, proxyRequestBoundMs, proxyShutdownGraceMs } from '@gateway/proxy';
import { hardStopMarginMs } from '@gateway/service-runtime';
import {
  deploymentOf, deployments, envValue, jobs, nameLabel, namespace, overlayNames, podLabels, renderOverlay, roleOf, roles, secretsExample, selects, workloads,
  type K8sObject, type LabelSelector, type Role,
} from './rendered-manifests.ts';

const repoRoot = new URL('../../', import.meta.url);

/** Each service's environment schema: the variables it reads, their defaults and their rules. */
const configSchemas: Record<Role, { shape: Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }> }> = {
  proxy: proxyConfigSchema as never,
  admin: adminConfigSchema as never,
  ledger: ledgerConfigSchema as never,
};

/**
 * What a deployment needs beyond the schema's own requirements: without DATABASE_URL the ledger
 * and the admin would write an embedded database to the read-only root filesystem; without
 * REDIS_URL each proxy replica would keep its own RPM count; the migrations are the Job's.
 */
const deploymentRequires: Record<Role, Record<string, string | undefined>> = {
  proxy: { REDIS_URL: undefined },
  admin: { DATABASE_URL: undefined, ADMIN_MIGRATIONS: 'verify' },
  ledger: { DATABASE_URL: undefined, LEDGER_MIGRATIONS: 'verify' },
};

/** Variables a container may set that no config schema reads: Node's and glibc's own, and OpenTelemetry's standard ones. */
const runtimeVariables = /^(NODE_OPTIONS|MALLOC_ARENA_MAX|OTEL_[A-Z_]+)$/;
/** Variables that hold a secret: always from a Secret, never a literal in a manifest. */
const secretVariables = new Set(['DATABASE_URL', 'REDIS_URL', 'ADMIN_ENCRYPTION_KEY', 'ADMIN_ENCRYPTION_KEYS_PREVIOUS', 'ADMIN_BOOTSTRAP_TOKEN', 'RAZORPAY_KEY_SECRET', 'RAZORPAY_WEBHOOK_SECRET', 'SMTP_URL']);
/** The proxy's metrics port variable and friends, by role. */
const metricsPortVariable: Record<Role, string> = { proxy: 'PROXY_METRICS_PORT', admin: 'ADMIN_METRICS_PORT', ledger: 'LEDGER_METRICS_PORT' };
const migrationsVariable: Record<'admin' | 'ledger', string> = { admin: 'ADMIN_MIGRATIONS', ledger: 'LEDGER_MIGRATIONS' };

/** The value a container's config sees for a variable: its literal, else the schema's default. */
function configValue(role: Role, container: any, name: string): unknown {
  const literal = envValue(container, name);
  const parsed = configSchemas[role].shape[name]!.safeParse(literal);
  return parsed.success ? parsed.data : undefined;
}

/** The container ports of a pod template by name. */
function containerPortNames(workload: K8sObject): Map<string, number> {
  const names = new Map<string, number>();
  for (const container of workload.spec.template.spec.containers) for (const port of container.ports ?? []) if (port.name) names.set(port.name, port.containerPort);
  return names;
}

/** Whether a port reference (a name or a number) names a container port of a pod template. */
function namesContainerPort(workload: K8sObject, port: string | number): boolean {
  const names = containerPortNames(workload);
  return typeof port === 'string' ? names.has(port) : [...names.values()].includes(port);
}

/** Selectors select the pods (or Services) they mean and no others. */
function selectorProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const podTemplates = workloads(objects);
  /** The workloads whose pods a selector selects. */
  const selected = (selector: LabelSelector) => podTemplates.filter((workload) => selects(selector, podLabels(workload)));
  for (const deployment of deployments(objects)) {
    const at = `Deployment ${deployment.metadata.name}`;
    const matches = selected(deployment.spec.selector);
    if (!matches.includes(deployment)) problems.push(`${at}: selector does not select its own pod template`);
    for (const other of matches.filter((workload) => workload !== deployment)) problems.push(`${at}: selector also selects the pods of ${other.kind} ${other.metadata.name}`);
    for (const constraint of deployment.spec.template.spec.topologySpreadConstraints ?? []) {
      if (!selects(constraint.labelSelector, podLabels(deployment))) problems.push(`${at}: topology spread over ${constraint.topologyKey} does not count its own pods`);
    }
  }
  for (const service of objects.filter((object) => object.kind === 'Service')) {
    const at = `Service ${service.metadata.name}`;
    const matches = selected({ matchLabels: service.spec.selector ?? {} });
    if (matches.length !== 1 || matches[0]!.kind !== 'Deployment') {
      problems.push(`${at}: selects ${matches.map((workload) => `${workload.kind} ${workload.metadata.name}`).join(', ') || 'no pods'}, not exactly one Deployment`);
      continue;
    }
    for (const port of service.spec.ports ?? []) {
      if (!namesContainerPort(matches[0]!, port.targetPort ?? port.port)) problems.push(`${at}: port ${port.name} targets ${port.targetPort}, which ${matches[0]!.metadata.name}'s containers do not expose`);
    }
  }
  for (const budget of objects.filter((object) => object.kind === 'PodDisruptionBudget')) {
    const matches = selected(budget.spec.selector);
    if (matches.length !== 1 || matches[0]!.kind !== 'Deployment') problems.push(`PodDisruptionBudget ${budget.metadata.name}: selects ${matches.map((workload) => workload.metadata.name).join(', ') || 'no pods'}, not exactly one Deployment`);
  }
  for (const autoscaler of objects.filter((object) => object.kind === 'HorizontalPodAutoscaler')) {
    const at = `HorizontalPodAutoscaler ${autoscaler.metadata.name}`;
    const { kind, name } = autoscaler.spec.scaleTargetRef;
    const target = objects.find((object) => object.kind === kind && object.metadata.name === name && object.metadata.namespace === autoscaler.metadata.namespace);
    if (target === undefined) {
      problems.push(`${at}: scales ${kind} ${name}, which is not applied`);
      continue;
    }
    // kubectl apply would reset the autoscaler's choice to this number on every apply.
    if (target.spec.replicas !== undefined) problems.push(`${at}: its target ${name} also sets spec.replicas`);
    if ((autoscaler.spec.minReplicas ?? 1) > autoscaler.spec.maxReplicas) problems.push(`${at}: minReplicas above maxReplicas`);
    const scalesOnCpu = (autoscaler.spec.metrics ?? []).some((metric: any) => metric.type === 'Resource' && metric.resource?.name === 'cpu');
    for (const container of target.spec.template.spec.containers) {
      if (scalesOnCpu && container.resources?.requests?.cpu === undefined) problems.push(`${at}: scales on CPU utilization but ${name}/${container.name} requests no CPU`);
    }
  }
  const services = objects.filter((object) => object.kind === 'Service');
  for (const monitor of objects.filter((object) => object.kind === 'ServiceMonitor')) {
    const at = `ServiceMonitor ${monitor.metadata.name}`;
    const namespaces: string[] = monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace];
    const scraped = services.filter((service) => namespaces.includes(service.metadata.namespace ?? '') && selects(monitor.spec.selector, service.metadata.labels ?? {}));
    for (const role of roles) if (!scraped.some((service) => service.metadata.name === role)) problems.push(`${at}: does not select the ${role} Service`);
    for (const endpoint of monitor.spec.endpoints ?? []) {
      for (const service of scraped) {
        if (!(service.spec.ports ?? []).some((port: any) => port.name === endpoint.port)) problems.push(`${at}: Service ${service.metadata.name} has no port named ${endpoint.port}`);
      }
    }
  }
  return problems;
}

/** Every variable a service's schema (or a deployment) requires is set; every variable set is read; every literal parses. */
function requiredEnvProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const deployment of deployments(objects)) {
    const role = roleOf(deployment);
    const shape = configSchemas[role].shape;
    for (const container of deployment.spec.template.spec.containers) {
      const at = `${role}/${container.name}`;
      const env = new Map<string, any>((container.env ?? []).map((entry: any) => [entry.name, entry]));
      const required = Object.entries(shape).filter(([, field]) => !field.safeParse(undefined).success).map(([name]) => name);
      for (const name of required) if (!env.has(name)) problems.push(`${at}: ${name} is required by the ${role}'s config schema and not set`);
      for (const [name, value] of Object.entries(deploymentRequires[role])) {
        if (!env.has(name)) problems.push(`${at}: ${name} is not set`);
        else if (value !== undefined && env.get(name).value !== value) problems.push(`${at}: ${name} is not ${value}`);
      }
      for (const [name, entry] of env) {
        if (shape[name] === undefined) {
          if (!runtimeVariables.test(name)) problems.push(`${at}: ${name} is read by no part of the ${role}'s config`);
          continue;
        }
        if (entry.value !== undefined && !shape[name].safeParse(String(entry.value)).success) problems.push(`${at}: ${name}=${entry.value} does not parse`);
      }
    }
  }
  for (const job of jobs(objects)) {
    for (const container of job.spec.template.spec.containers) {
      // The migrate CLIs read DATABASE_URL and nothing else.
      if (!(container.env ?? []).some((entry: any) => entry.name === 'DATABASE_URL')) problems.push(`Job ${job.metadata.name}: DATABASE_URL is not set`);
    }
  }
  return problems;
}

/** Secrets are referenced, never inlined: each reference names a key of the example Secret or a cert-manager Secret. */
function secretReferenceProblems(objects: K8sObject[], example: K8sObject): string[] {
  const problems: string[] = [];
  for (const secret of objects.filter((object) => object.kind === 'Secret')) problems.push(`Secret ${secret.metadata.name} is part of the kustomization: secrets are applied separately`);
  const exampleKeys = new Set(Object.keys({ ...example.stringData, ...example.data }));
  const certificateSecrets = new Set(objects.filter((object) => object.kind === 'Certificate').map((certificate) => certificate.spec.secretName));
  for (const workload of workloads(objects)) {
    const pod = workload.spec.template.spec;
    for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
      const at = `${workload.kind} ${workload.metadata.name}/${container.name}`;
      for (const entry of container.env ?? []) {
        const reference = entry.valueFrom?.secretKeyRef;
        if (secretVariables.has(entry.name) && reference === undefined) problems.push(`${at}: ${entry.name} is not taken from a Secret`);
        if (reference === undefined) continue;
        if (reference.name !== example.metadata.name) problems.push(`${at}: ${entry.name} refers to Secret ${reference.name}, which secrets.example.yaml does not describe`);
        else if (!exampleKeys.has(reference.key)) problems.push(`${at}: ${entry.name} refers to key ${reference.key}, which secrets.example.yaml does not have`);
      }
      for (const source of container.envFrom ?? []) {
        if (source.secretRef !== undefined && source.secretRef.name !== example.metadata.name) problems.push(`${at}: envFrom Secret ${source.secretRef.name} is not described`);
      }
    }
    for (const volume of pod.volumes ?? []) {
      if (volume.secret !== undefined && !certificateSecrets.has(volume.secret.secretName)) problems.push(`${workload.kind} ${workload.metadata.name}: volume ${volume.name} mounts Secret ${volume.secret.secretName}, which no Certificate issues`);
    }
  }
  return problems;
}

/** Every long-running container has startup, readiness and liveness probes, each on a port its container exposes. */
function probeProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const deployment of deployments(objects)) {
    for (const container of deployment.spec.template.spec.containers) {
      const at = `${deployment.metadata.name}/${container.name}`;
      for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const probe = container[kind];
        if (probe === undefined) {
          problems.push(`${at}: no ${kind}`);
          continue;
        }
        const port = probe.httpGet?.port ?? probe.tcpSocket?.port ?? probe.grpc?.port;
        if (port === undefined) problems.push(`${at}: ${kind} has no port`);
        else if (!(container.ports ?? []).some((candidate: any) => candidate.name === port || candidate.containerPort === port)) problems.push(`${at}: ${kind} port ${port} is not a port of the container`);
      }
    }
  }
  return problems;
}

/**
 * Each pod's terminationGracePeriodSeconds exceeds the longest its process can take to stop after
 * the kubelet starts stopping it: the preStop sleep, then its stop bound (SHUTDOWN_GRACE_MS; for
 * the proxy proxyDrainBoundMs over its grace, by default the longest request its limits allow,
 * plus the Settles of streams cut at the grace, the outbox's hand-over, the credit grants'
 * closing and tracing's last export), then runServiceProcess's hard-stop margin, after which it
 * exits by itself. An autoscaler's scale-down window and each policy's period outlast its
 * target's grace: replicas still draining are not wanted back, and one period's removals have
 * drained before the next period's begin.
 */
function graceProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const deployment of deployments(objects)) {
    const role = roleOf(deployment);
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    const preStop = container.lifecycle?.preStop;
    if (preStop?.sleep?.seconds === undefined) problems.push(`${role}: no preStop sleep (endpoints would still send requests to a pod that stopped accepting)`);
    const preStopMs = (preStop?.sleep?.seconds ?? 0) * 1000;
    const value = (name: string) => configValue(role, container, name) as number;
    let stopBoundMs = value('SHUTDOWN_GRACE_MS');
    if (role === 'proxy') {
      const limits = {
        SHUTDOWN_GRACE_MS: stopBoundMs, UPSTREAM_TOTAL_TIMEOUT_MS: value('UPSTREAM_TOTAL_TIMEOUT_MS'),
        LEDGER_CALL_TIMEOUT_MS: value('LEDGER_CALL_TIMEOUT_MS'), PROXY_RECALL_WAIT_MS: value('PROXY_RECALL_WAIT_MS'),
      };
      // A grace shorter than the longest request would cut streams the proxy's limits allow.
      if (proxyShutdownGraceMs(limits) < proxyRequestBoundMs(limits)) problems.push(`proxy: SHUTDOWN_GRACE_MS ${stopBoundMs} ms cuts requests its limits allow (${proxyRequestBoundMs(limits)} ms)`);
      stopBoundMs = proxyDrainBoundMs({ SHUTDOWN_GRACE_MS: proxyShutdownGraceMs(limits), LEDGER_CALL_TIMEOUT_MS: limits.LEDGER_CALL_TIMEOUT_MS });
    }
    const drainMs = preStopMs + stopBoundMs + hardStopMarginMs;
    const graceMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000;
    if (!(graceMs > drainMs)) problems.push(`${role}: terminationGracePeriodSeconds ${graceMs / 1000} s does not exceed its drain bound of ${drainMs / 1000} s`);
  }
  for (const autoscaler of objects.filter((object) => object.kind === 'HorizontalPodAutoscaler')) {
    const target = deployments(objects).find((deployment) => deployment.metadata.name === autoscaler.spec.scaleTargetRef.name);
    const graceS = target?.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    const scaleDown = autoscaler.spec.behavior?.scaleDown;
    // Kubernetes' defaults: a 300 s window, and 100% of the replicas per 15 s.
    if ((scaleDown?.stabilizationWindowSeconds ?? 300) < graceS) problems.push(`HorizontalPodAutoscaler ${autoscaler.metadata.name}: scale-down window shorter than its target's ${graceS} s grace`);
    for (const policy of scaleDown?.policies ?? [{ periodSeconds: 15 }]) {
      if (policy.periodSeconds < graceS) problems.push(`HorizontalPodAutoscaler ${autoscaler.metadata.name}: a scale-down period of ${policy.periodSeconds} s, shorter than its target's ${graceS} s grace`);
    }
  }
  return problems;
}

/** The port named `metrics` is *_METRICS_PORT in the container and published by the Service under that name. */
function metricsPortProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const role of roles) {
    const deployment = deploymentOf(objects, role);
    if (deployment === undefined) continue;
    const container = deployment.spec.template.spec.containers[0];
    const configured = configValue(role, container, metricsPortVariable[role]);
    const containerPort = (container.ports ?? []).find((port: any) => port.name === 'metrics')?.containerPort;
    if (containerPort !== configured) problems.push(`${role}: container port "metrics" is ${containerPort}, ${metricsPortVariable[role]} is ${configured}`);
    const service = objects.find((object) => object.kind === 'Service' && object.metadata.name === role);
    const published = (service?.spec.ports ?? []).find((port: any) => port.name === 'metrics');
    if (published === undefined) problems.push(`${role}: its Service publishes no port named metrics`);
    else if (published.targetPort !== 'metrics' && published.targetPort !== containerPort) problems.push(`${role}: its Service's metrics port targets ${published.targetPort}`);
  }
  return problems;
}

/** The tag (or digest) an image reference pins. */
function imageTagOf(image: string): string | undefined {
  const digest = /@sha256:([0-9a-f]{12})/.exec(image);
  if (digest !== null) return digest[1];
  const lastColon = image.lastIndexOf(':');
  return lastColon > image.lastIndexOf('/') ? image.slice(lastColon + 1) : undefined;
}

/** One migration Job per migrating service, of the release's image and named after its tag; the Deployments only verify. */
function migrationProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const role of ['ledger', 'admin'] as const) {
    const deployment = deploymentOf(objects, role);
    if (deployment === undefined) continue;
    const container = deployment.spec.template.spec.containers[0];
    if (envValue(container, migrationsVariable[role]) !== 'verify') problems.push(`${role}: ${migrationsVariable[role]} is not verify, so every pod would migrate at start`);
    const command = ['node', `services/${role}/src/migrate-cli.ts`];
    const migrationJobs = jobs(objects).filter((job) => JSON.stringify(job.spec.template.spec.containers[0].command) === JSON.stringify(command));
    if (migrationJobs.length !== 1) {
      problems.push(`${role}: ${migrationJobs.length} Jobs run ${command.join(' ')}, not one`);
      continue;
    }
    const [job] = migrationJobs as [K8sObject];
    const image = job.spec.template.spec.containers[0].image;
    if (image !== container.image) problems.push(`${role}: the migration Job runs ${image}, the Deployment ${container.image}`);
    const tag = imageTagOf(container.image);
    if (tag === undefined || tag === 'latest') problems.push(`${role}: the image ${container.image} pins no release tag`);
    else if (job.metadata.name !== `${role}-migrate-${tag}`) problems.push(`${role}: the migration Job is ${job.metadata.name}, not ${role}-migrate-${tag} (the release's image tag)`);
    // A Job's name is a DNS subdomain, and also its pods' job-name label value: at most 63 characters.
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(job.metadata.name) || job.metadata.name.length > 63) problems.push(`${role}: Job name ${job.metadata.name} is not a DNS subdomain of at most 63 characters`);
    if (!['Never', 'OnFailure'].includes(job.spec.template.spec.restartPolicy)) problems.push(`${role}: the migration Job's restartPolicy is ${job.spec.template.spec.restartPolicy}`);
  }
  return problems;
}

/** Every `node <file>` a container runs names a file of the repository (the image holds the same tree). */
function commandFileProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const workload of workloads(objects)) {
    for (const container of workload.spec.template.spec.containers) {
      const [program, file] = container.command ?? [];
      if (program !== 'node' || file === undefined) problems.push(`${workload.metadata.name}/${container.name}: command is not node <file>`);
      else if (!existsSync(new URL(file, repoRoot))) problems.push(`${workload.metadata.name}/${container.name}: ${file} does not exist`);
    }
  }
  return problems;
}

describe.each(overlayNames)('overlay %s: cross-references', (overlay) => {
  const objects = renderOverlay(overlay);

  it('selectors select the pods and Services they mean, and no others', () => {
    expect(selectorProblems(objects)).toEqual([]);
  });

  it("every variable a service's config requires is set, every variable set is one it reads, every literal parses", () => {
    expect(requiredEnvProblems(objects)).toEqual([]);
  });

  it('every Secret key referenced exists in secrets.example.yaml, and no secret is inlined', () => {
    expect(secretReferenceProblems(objects, secretsExample)).toEqual([]);
  });

  it('every container has startup, readiness and liveness probes on ports it exposes', () => {
    expect(probeProblems(objects)).toEqual([]);
  });

  it("each pod's termination grace exceeds its drain bound (the proxy's: preStop + its longest request + the settle bound), and the autoscaler's scale-down outlasts it", () => {
    expect(graceProblems(objects)).toEqual([]);
  });

  it('the metrics ports are *_METRICS_PORT and each Service publishes one', () => {
    expect(metricsPortProblems(objects)).toEqual([]);
  });

  it("one migration Job per service, of the release's image and named after its tag; the Deployments only verify", () => {
    expect(migrationProblems(objects)).toEqual([]);
  });

  it('every command runs a file of the repository', () => {
    expect(commandFileProblems(objects)).toEqual([]);
  });

  it('the namespace the checks assume is the one applied', () => {
    expect(objects.every((object) => object.kind === 'Namespace' || object.metadata.namespace === namespace)).toBe(true);
  });
});

describe('the cross-reference checks catch the mistakes they are for', () => {
  const production = () => renderOverlay('production');
  const containerOf = (objects: K8sObject[], role: Role) => deploymentOf(objects, role)!.spec.template.spec.containers[0];
  const setEnv = (container: any, name: string, value: string) => {
    const entry = container.env.find((candidate: any) => candidate.name === name);
    if (entry === undefined) container.env.push({ name, value });
    else entry.value = value;
  };
  const removeEnv = (container: any, name: string) => { container.env = container.env.filter((entry: any) => entry.name !== name); };
  const find = (objects: K8sObject[], kind: string, name: string) => objects.find((object) => object.kind === kind && object.metadata.name === name)!;

  it.each([
    ['a Service selector with a typo', (objects: K8sObject[]) => { find(objects, 'Service', 'ledger').spec.selector = { [nameLabel]: 'legder' }; }],
    ['a Service port targeting a name the pods do not have', (objects: K8sObject[]) => { find(objects, 'Service', 'admin').spec.ports[0].targetPort = 'web'; }],
    ['a Deployment selector that misses its pods', (objects: K8sObject[]) => { deploymentOf(objects, 'proxy')!.spec.selector.matchLabels = { [nameLabel]: 'proxies' }; }],
    ['migration pods labelled as the service', (objects: K8sObject[]) => { jobs(objects)[0]!.spec.template.metadata.labels[nameLabel] = 'ledger'; }],
    ['a PDB selecting nothing', (objects: K8sObject[]) => { find(objects, 'PodDisruptionBudget', 'admin').spec.selector.matchLabels[nameLabel] = 'admins'; }],
    ['an HPA aimed at a missing Deployment', (objects: K8sObject[]) => { find(objects, 'HorizontalPodAutoscaler', 'proxy').spec.scaleTargetRef.name = 'proxy-v2'; }],
    ['replicas on the autoscaled Deployment', (objects: K8sObject[]) => { deploymentOf(objects, 'proxy')!.spec.replicas = 3; }],
    ['an HPA on CPU without a CPU request', (objects: K8sObject[]) => { delete containerOf(objects, 'proxy').resources.requests.cpu; }],
    ['a ServiceMonitor on a port no Service has', (objects: K8sObject[]) => { find(objects, 'ServiceMonitor', 'inr-gateway').spec.endpoints[0].port = 'prometheus'; }],
    ['a ServiceMonitor that misses a Service', (objects: K8sObject[]) => { delete find(objects, 'Service', 'admin').metadata.labels!['app.kubernetes.io/part-of']; }],
    ['topology spread counting other pods', (objects: K8sObject[]) => { deploymentOf(objects, 'ledger')!.spec.template.spec.topologySpreadConstraints[0].labelSelector.matchLabels[nameLabel] = 'proxy'; }],
  ])('selectors: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(selectorProblems(objects)).not.toEqual([]);
  });

  it.each([
    ['a required variable left out (ADMIN_ENCRYPTION_KEY)', (objects: K8sObject[]) => removeEnv(containerOf(objects, 'admin'), 'ADMIN_ENCRYPTION_KEY')],
    ['a misspelled variable', (objects: K8sObject[]) => setEnv(containerOf(objects, 'ledger'), 'SHUTDOWN_GRACE_MSS', '30000')],
    ['a literal that does not parse', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'SHUTDOWN_GRACE_MS', '30s')],
    ['no Redis for the proxies', (objects: K8sObject[]) => removeEnv(containerOf(objects, 'proxy'), 'REDIS_URL')],
    ['no database for the ledger (embedded PGlite on a read-only filesystem)', (objects: K8sObject[]) => removeEnv(containerOf(objects, 'ledger'), 'DATABASE_URL')],
    ['a migration Job without DATABASE_URL', (objects: K8sObject[]) => { jobs(objects)[1]!.spec.template.spec.containers[0].env = []; }],
  ])('env: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(requiredEnvProblems(objects)).not.toEqual([]);
  });

  it.each([
    ['a key the example Secret lacks', (objects: K8sObject[]) => { containerOf(objects, 'admin').env.find((entry: any) => entry.name === 'ADMIN_ENCRYPTION_KEY').valueFrom.secretKeyRef.key = 'ENCRYPTION_KEY'; }],
    ['a Secret the example does not describe', (objects: K8sObject[]) => { jobs(objects)[0]!.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name = 'ledger-db'; }],
    ['a database URL written into the manifest', (objects: K8sObject[]) => { const container = containerOf(objects, 'ledger'); removeEnv(container, 'DATABASE_URL'); container.env.push({ name: 'DATABASE_URL', value: 'postgres://ledger:hunter2@db/ledger' }); }],
    ['a Secret object in the kustomization', (objects: K8sObject[]) => { objects.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'gateway-secrets', namespace }, stringData: {} }); }],
    ['a TLS volume from a Secret no Certificate issues', (objects: K8sObject[]) => { deploymentOf(objects, 'proxy')!.spec.template.spec.volumes.find((volume: any) => volume.secret).secret.secretName = 'proxy-tls'; }],
  ])('secrets: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(secretReferenceProblems(objects, secretsExample)).not.toEqual([]);
  });

  it.each([
    ['a probe on a port name the container does not have', (objects: K8sObject[]) => { containerOf(objects, 'ledger').readinessProbe.httpGet.port = 'health'; }],
    ['a probe on a port number the container does not expose', (objects: K8sObject[]) => { containerOf(objects, 'proxy').livenessProbe.httpGet.port = 8081; }],
    ['no startup probe', (objects: K8sObject[]) => { delete containerOf(objects, 'admin').startupProbe; }],
  ])('probes: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(probeProblems(objects)).not.toEqual([]);
  });

  it.each([
    ['the proxy grace of before (70 s), which cut streams at 30 s', (objects: K8sObject[]) => { deploymentOf(objects, 'proxy')!.spec.template.spec.terminationGracePeriodSeconds = 70; }],
    ['a longer SHUTDOWN_GRACE_MS without a longer grace', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'SHUTDOWN_GRACE_MS', '400000')],
    ['the proxy SHUTDOWN_GRACE_MS of before (30 s), shorter than its longest request', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'SHUTDOWN_GRACE_MS', '30000')],
    ['a longer upstream limit without a longer grace', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'UPSTREAM_TOTAL_TIMEOUT_MS', '330000')],
    ['a scale-down window shorter than a drain', (objects: K8sObject[]) => { find(objects, 'HorizontalPodAutoscaler', 'proxy').spec.behavior.scaleDown.stabilizationWindowSeconds = 300; }],
    ['a scale-down period shorter than a drain (the policy of before)', (objects: K8sObject[]) => { find(objects, 'HorizontalPodAutoscaler', 'proxy').spec.behavior.scaleDown.policies = [{ type: 'Pods', value: 1, periodSeconds: 60 }]; }],
    ['a longer ledger call timeout (the settle bound)', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'LEDGER_CALL_TIMEOUT_MS', '10000')],
    ['no preStop sleep', (objects: K8sObject[]) => { delete containerOf(objects, 'admin').lifecycle; }],
    ['a ledger grace shorter than its shutdown grace', (objects: K8sObject[]) => { deploymentOf(objects, 'ledger')!.spec.template.spec.terminationGracePeriodSeconds = 35; }],
  ])('grace: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(graceProblems(objects)).not.toEqual([]);
  });

  it.each([
    ['*_METRICS_PORT apart from the container port', (objects: K8sObject[]) => setEnv(containerOf(objects, 'proxy'), 'PROXY_METRICS_PORT', '9200')],
    ['*_METRICS_PORT left to a default the container port does not match', (objects: K8sObject[]) => { removeEnv(containerOf(objects, 'ledger'), 'LEDGER_METRICS_PORT'); containerOf(objects, 'ledger').ports.find((port: any) => port.name === 'metrics').containerPort = 9300; }],
    ['a Service without its metrics port', (objects: K8sObject[]) => { const service = find(objects, 'Service', 'admin'); service.spec.ports = service.spec.ports.filter((port: any) => port.name !== 'metrics'); }],
  ])('metrics: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(metricsPortProblems(objects)).not.toEqual([]);
  });

  it.each([
    ['a new image tag without renaming the Jobs', (objects: K8sObject[]) => { for (const workload of workloads(objects)) workload.spec.template.spec.containers[0].image = 'registry.example.com/inr-gateway:1.1.0'; }],
    ['a Deployment migrating at start', (objects: K8sObject[]) => setEnv(containerOf(objects, 'ledger'), 'LEDGER_MIGRATIONS', 'apply')],
    ['a Job on another image', (objects: K8sObject[]) => { jobs(objects)[1]!.spec.template.spec.containers[0].image = 'inr-gateway:latest'; }],
    ['no migration Job for the admin', (objects: K8sObject[]) => { objects.splice(objects.findIndex((object) => object.kind === 'Job' && object.metadata.name.startsWith('admin-')), 1); }],
    ['a release tag that makes an invalid Job name', (objects: K8sObject[]) => { for (const job of jobs(objects)) job.metadata.name = job.metadata.name.replace('1.0.0', '1.0.0_RC1'); for (const workload of workloads(objects)) workload.spec.template.spec.containers[0].image = 'registry.example.com/inr-gateway:1.0.0_RC1'; }],
    ['a Job that restarts forever', (objects: K8sObject[]) => { jobs(objects)[0]!.spec.template.spec.restartPolicy = 'Always'; }],
  ])('migrations: %s', (_mistake, breakIt) => {
    const objects = production();
    breakIt(objects);
    expect(migrationProblems(objects)).not.toEqual([]);
  });

  it('commands: a file that does not exist', () => {
    const objects = production();
    jobs(objects)[0]!.spec.template.spec.containers[0].command = ['node', 'services/ledger/src/migrate.ts'];
    expect(commandFileProblems(objects)).not.toEqual([]);
  });
});
