/**
 * The Kubernetes manifests (deploy/kubernetes) as a security contract, checked without a cluster
 * on every overlay as `kubectl kustomize` renders it (what `kubectl apply -k` applies): every object
 * validates against the Kubernetes / cert-manager / Prometheus Operator schemas; every workload
 * runs a hardened pod; every Deployment has its mTLS identity mounted; the namespace denies by
 * default, the ledger's gRPC port admits only the proxy and the admin, and the metrics ports only
 * the monitoring namespace; nothing turns on plaintext gRPC. The cross-references between objects
 * (selectors, env, Secrets, probes, grace, migrations) are in tests/deploy/cross-references.test.ts.
 * The checks are functions returning problems so that the last block can prove each one catches
 * the mistake it is there for (a check that cannot fail protects nothing).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { Certificate } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate';
import { Issuer } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Issuer';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import {
  deployments, manifestRoot, namespace, nameLabel, overlayNames, podLabels, readManifestFile, renderOverlay, roleOf, roles, secretsExample, selects, workloads,
  type K8sObject, type LabelSelector, type Role,
} from './deploy/rendered-manifests.ts';

const tlsDir = '/var/run/gateway/tls';
const ledgerGrpcPort = 50051;
const adminGrpcPort = 50052;
/** The metrics port of each service (its *_METRICS_PORT in the manifests). */
const metricsPorts: Record<Role, number> = { proxy: 9101, admin: 9102, ledger: 9103 };

/** One entry of a NetworkPolicy rule's `from` / `to`. */
type PolicyPeer = { podSelector?: LabelSelector; namespaceSelector?: LabelSelector; ipBlock?: { cidr: string; except?: string[] } };
/** One entry of a NetworkPolicy rule's `ports`. */
type PolicyPort = { protocol?: string; port?: number | string; endPort?: number };
/** One ingress or egress rule. */
type PolicyRule = { from?: PolicyPeer[]; to?: PolicyPeer[]; ports?: PolicyPort[] };

const networkPolicies = (objects: K8sObject[]) => objects.filter((object) => object.kind === 'NetworkPolicy');

/** The values a selector pins `app.kubernetes.io/name` to, or undefined when it lets any name through. */
function pinnedNames(selector: LabelSelector | undefined): string[] | undefined {
  if (selector === undefined) return undefined;
  const exact = selector.matchLabels?.[nameLabel];
  if (exact !== undefined) return [exact];
  const inExpression = selector.matchExpressions?.find((expression) => expression.key === nameLabel && expression.operator === 'In');
  return inExpression?.values;
}

/** Whether a policy applies in a direction (policyTypes defaults to Ingress, plus Egress when egress rules exist). */
function hasPolicyType(policy: K8sObject, type: 'Ingress' | 'Egress'): boolean {
  const types: string[] | undefined = policy.spec.policyTypes;
  if (types !== undefined) return types.includes(type);
  return type === 'Ingress' || policy.spec.egress !== undefined;
}

/** Whether a rule's ports admit a TCP/UDP port, given the destination container's port names. */
function portsAdmit(ports: PolicyPort[] | undefined, protocol: 'TCP' | 'UDP', port: number, portNames: Record<string, number>): boolean {
  if (ports === undefined || ports.length === 0) return true;
  return ports.some((entry) => {
    if ((entry.protocol ?? 'TCP') !== protocol) return false;
    if (entry.port === undefined) return true;
    const number = typeof entry.port === 'string' ? portNames[entry.port] : entry.port;
    if (number === undefined) return false;
    return entry.endPort === undefined ? number === port : port >= number && port <= entry.endPort;
  });
}

/** An IPv4 address as a 32-bit number. */
function ipv4ToNumber(address: string): number {
  return address.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
}

/** Whether an IPv4 CIDR contains an IPv4 address (IPv6 CIDRs contain no IPv4 address here). */
function cidrContains(cidr: string, address: string): boolean {
  if (cidr.includes(':')) return false;
  const [base, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  const size = 2 ** (32 - bits);
  const start = Math.floor(ipv4ToNumber(base!) / size) * size;
  const value = ipv4ToNumber(address);
  return value >= start && value < start + size;
}

/** A place a packet comes from or goes to: a pod (labels, namespace) or an address outside the cluster. */
type Endpoint = { pod: { labels: Record<string, string>; namespace: string; namespaceLabels: Record<string, string> } } | { address: string };

const namespaceLabelsOf = (name: string): Record<string, string> => ({ 'kubernetes.io/metadata.name': name });
/** A pod of this namespace whose `app.kubernetes.io/name` is `name` (a service, or a migration Job's `<service>-migrate`). */
const labelledPod = (name: string): Endpoint => ({ pod: { labels: { [nameLabel]: name, 'app.kubernetes.io/part-of': 'inr-gateway' }, namespace, namespaceLabels: namespaceLabelsOf(namespace) } });
const gatewayPod = (role: Role): Endpoint => labelledPod(role);

/** Whether a policy peer matches an endpoint, seen from a policy in `namespace`. */
function peerMatches(peer: PolicyPeer, endpoint: Endpoint): boolean {
  if (peer.ipBlock !== undefined) {
    // Pod addresses are private (the cluster's ranges); an ipBlock of public space does not reach them.
    if (!('address' in endpoint)) return false;
    return cidrContains(peer.ipBlock.cidr, endpoint.address) && !(peer.ipBlock.except ?? []).some((cidr) => cidrContains(cidr, endpoint.address));
  }
  if (!('pod' in endpoint)) return false;
  const namespaceOk = peer.namespaceSelector === undefined ? endpoint.pod.namespace === namespace : selects(peer.namespaceSelector, endpoint.pod.namespaceLabels);
  const podOk = peer.podSelector === undefined ? true : selects(peer.podSelector, endpoint.pod.labels);
  return namespaceOk && podOk;
}

/** Whether a rule's peer list admits an endpoint (no list at all admits everything). */
function peersAdmit(peers: PolicyPeer[] | undefined, endpoint: Endpoint): boolean {
  if (peers === undefined || peers.length === 0) return true;
  return peers.some((peer) => peerMatches(peer, endpoint));
}

/** Whether the policies let a packet through one side (ingress into `self`, or egress out of it). */
function sideAllows(policies: K8sObject[], direction: 'Ingress' | 'Egress', self: Endpoint, other: Endpoint, protocol: 'TCP' | 'UDP', port: number, portNames: Record<string, number>): boolean {
  if (!('pod' in self) || self.pod.namespace !== namespace) return true; // outside our policies
  const selecting = policies.filter((policy) => (policy.metadata.namespace ?? namespace) === namespace && hasPolicyType(policy, direction) && selects(policy.spec.podSelector, self.pod.labels));
  if (selecting.length === 0) return true; // Kubernetes: a pod no policy selects is not isolated
  return selecting.some((policy) => {
    const rules: PolicyRule[] = (direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? [];
    return rules.some((rule) => peersAdmit(direction === 'Ingress' ? rule.from : rule.to, other) && portsAdmit(rule.ports, protocol, port, portNames));
  });
}

/** The named container ports of a role's pods, which a policy may name instead of a number. */
function portNamesOf(objects: K8sObject[], role: Role): Record<string, number> {
  const deployment = deployments(objects).find((candidate) => roleOf(candidate) === role);
  const names: Record<string, number> = {};
  for (const container of deployment?.spec.template.spec.containers ?? []) for (const port of container.ports ?? []) if (port.name) names[port.name] = port.containerPort;
  return names;
}

/** Whether the NetworkPolicies let `from` open a connection to `to` on a port. */
function connectionAllowed(objects: K8sObject[], from: Endpoint, to: Endpoint, port: number, protocol: 'TCP' | 'UDP' = 'TCP'): boolean {
  const policies = networkPolicies(objects);
  const toRole = 'pod' in to ? (to.pod.labels[nameLabel] as Role) : undefined;
  const portNames = toRole !== undefined && roles.includes(toRole) ? portNamesOf(objects, toRole) : {};
  return sideAllows(policies, 'Egress', from, to, protocol, port, portNames) && sideAllows(policies, 'Ingress', to, from, protocol, port, portNames);
}

/** Hardening every gateway pod needs: non-root, read-only, no privileges, no token, RuntimeDefault seccomp. */
function podHardeningProblems(deployment: K8sObject): string[] {
  const name = deployment.metadata.name;
  const pod = deployment.spec.template.spec;
  const podSecurity = pod.securityContext ?? {};
  const problems: string[] = [];
  if (pod.automountServiceAccountToken !== false) problems.push(`${name}: automountServiceAccountToken is not false`);
  for (const hostNamespace of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[hostNamespace] === true) problems.push(`${name}: ${hostNamespace}`);
  for (const id of ['runAsUser', 'runAsGroup', 'fsGroup']) {
    if (!Number.isInteger(podSecurity[id]) || podSecurity[id] <= 0) problems.push(`${name}: pod ${id} is not a numeric non-root id`);
  }
  const tmpVolumes = new Set((pod.volumes ?? []).filter((volume: any) => volume.emptyDir !== undefined).map((volume: any) => volume.name));
  for (const container of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    const at = `${name}/${container.name}`;
    const security = container.securityContext ?? {};
    if ((security.runAsNonRoot ?? podSecurity.runAsNonRoot) !== true) problems.push(`${at}: runAsNonRoot is not true`);
    if ((security.runAsUser ?? podSecurity.runAsUser) === 0) problems.push(`${at}: runs as uid 0`);
    if ((security.seccompProfile ?? podSecurity.seccompProfile)?.type !== 'RuntimeDefault') problems.push(`${at}: seccompProfile is not RuntimeDefault`);
    if (security.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
    if (security.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem is not true`);
    if (security.privileged === true) problems.push(`${at}: privileged`);
    if (!(security.capabilities?.drop ?? []).includes('ALL')) problems.push(`${at}: capabilities do not drop ALL`);
    if ((security.capabilities?.add ?? []).length > 0) problems.push(`${at}: adds capabilities`);
    const tmpMount = (container.volumeMounts ?? []).find((mount: any) => mount.mountPath === '/tmp');
    if (tmpMount === undefined || !tmpVolumes.has(tmpMount.name)) problems.push(`${at}: /tmp is not a writable emptyDir`);
  }
  return problems;
}

/** The service's mTLS identity: its cert-manager Secret mounted read-only and the three GRPC_TLS_* paths set. */
function tlsProblems(deployment: K8sObject): string[] {
  const role = roleOf(deployment);
  const pod = deployment.spec.template.spec;
  const problems: string[] = [];
  const volume = (pod.volumes ?? []).find((candidate: any) => candidate.secret?.secretName === `gateway-${role}-tls`);
  if (volume === undefined) return [`${role}: no volume from Secret gateway-${role}-tls`];
  if (volume.secret.defaultMode !== undefined && (volume.secret.defaultMode & 0o022) !== 0) problems.push(`${role}: TLS files writable by group or others`);
  for (const container of pod.containers) {
    const at = `${role}/${container.name}`;
    const mount = (container.volumeMounts ?? []).find((candidate: any) => candidate.name === volume.name);
    if (mount === undefined) problems.push(`${at}: TLS Secret not mounted`);
    else {
      if (mount.mountPath.replace(/\/$/, '') !== tlsDir) problems.push(`${at}: TLS Secret mounted at ${mount.mountPath}, not ${tlsDir}`);
      if (mount.readOnly !== true) problems.push(`${at}: TLS Secret mounted writable`);
    }
    const env = new Map<string, any>((container.env ?? []).map((entry: any) => [entry.name, entry]));
    for (const [variable, file] of [['GRPC_TLS_CA_FILE', 'ca.crt'], ['GRPC_TLS_CERT_FILE', 'tls.crt'], ['GRPC_TLS_KEY_FILE', 'tls.key']] as const) {
      if (env.get(variable)?.value !== `${tlsDir}/${file}`) problems.push(`${at}: ${variable} is not ${tlsDir}/${file}`);
    }
  }
  return problems;
}

/** Whether some policy isolates every pod of the namespace in both directions and admits nothing by itself. */
function defaultDenyProblems(objects: K8sObject[]): string[] {
  const denyAll = networkPolicies(objects).some((policy) => {
    const selector: LabelSelector = policy.spec.podSelector ?? {};
    const selectsAll = Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
    return (policy.metadata.namespace ?? namespace) === namespace && selectsAll && hasPolicyType(policy, 'Ingress') && hasPolicyType(policy, 'Egress') && (policy.spec.ingress ?? []).length === 0 && (policy.spec.egress ?? []).length === 0;
  });
  return denyAll ? [] : [`namespace ${namespace} has no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)`];
}

/**
 * Every ingress rule of a policy selecting the ledger that opens its gRPC port names its peers,
 * and each peer is a pod selector of this namespace pinned to the proxy or the admin: no
 * namespace selector, no ipBlock, no empty `from`, no selector that another pod could satisfy.
 */
function ledgerGrpcIngressProblems(objects: K8sObject[]): string[] {
  const ledger = deployments(objects).find((deployment) => roleOf(deployment) === 'ledger');
  if (ledger === undefined) return ['no ledger Deployment'];
  const portNames = portNamesOf(objects, 'ledger');
  const problems: string[] = [];
  // A pod that no ingress policy selects is not isolated: every rule below would be moot.
  const isolating = networkPolicies(objects).filter((policy) => (policy.metadata.namespace ?? namespace) === namespace && hasPolicyType(policy, 'Ingress') && selects(policy.spec.podSelector, podLabels(ledger)));
  if (isolating.length === 0) problems.push('no NetworkPolicy isolates the ledger: anything reaches its gRPC port');
  for (const policy of isolating) {
    for (const rule of (policy.spec.ingress ?? []) as PolicyRule[]) {
      if (!portsAdmit(rule.ports, 'TCP', ledgerGrpcPort, portNames)) continue;
      if (rule.from === undefined || rule.from.length === 0) {
        problems.push(`${policy.metadata.name}: admits the ledger's gRPC port from anywhere`);
        continue;
      }
      for (const peer of rule.from) {
        const names = pinnedNames(peer.podSelector);
        const pinnedToCallers = names !== undefined && names.length > 0 && names.every((name) => name === 'proxy' || name === 'admin');
        if (peer.ipBlock !== undefined || peer.namespaceSelector !== undefined || !pinnedToCallers) {
          problems.push(`${policy.metadata.name}: admits the ledger's gRPC port from ${JSON.stringify(peer)}`);
        }
      }
    }
  }
  return problems;
}

/** Every place a manifest could set GRPC_INSECURE (container env, ConfigMap or Secret keys), wherever it sits. */
function insecureSwitches(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => insecureSwitches(item, `${path}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  const record = value as Record<string, unknown>;
  const found = record.name === 'GRPC_INSECURE' ? [path] : [];
  for (const [key, child] of Object.entries(record)) {
    if (key === 'GRPC_INSECURE') found.push(`${path}.${key}`);
    found.push(...insecureSwitches(child, `${path}.${key}`));
  }
  return found;
}

/** Schema classes by `apiVersion/kind`; an unlisted kind fails the test so it gets one. */
const schemaClasses: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
  'cert-manager.io/v1/Certificate': Certificate,
  'cert-manager.io/v1/Issuer': Issuer,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** The `resources` of a kustomization file under deploy/kubernetes. */
const resourcesOf = (kustomizationPath: string): string[] => readManifestFile(kustomizationPath)[0]!.resources as string[];
/** The YAML files of a directory under deploy/kubernetes, kustomization.yaml excepted. */
const manifestFilesIn = (directory: string): string[] => readdirSync(new URL(directory, manifestRoot)).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml').sort();

describe('deploy/kubernetes layout', () => {
  it('the base lists every manifest beside it, the migrations base every Job file, and the example Secret is in no kustomization', () => {
    expect(resourcesOf('base/kustomization.yaml').sort()).toEqual(manifestFilesIn('base/'));
    expect(resourcesOf('base/migrations/kustomization.yaml').sort()).toEqual(manifestFilesIn('base/migrations/'));
    expect(manifestFilesIn('./')).toEqual(['secrets.example.yaml']);
  });

  it('there is a dev and a production overlay, each the base plus its release\'s migration Jobs', () => {
    expect(overlayNames).toEqual(['dev', 'production']);
    for (const overlay of overlayNames) {
      expect(resourcesOf(`overlays/${overlay}/kustomization.yaml`), overlay).toEqual(['../../base', 'migrations']);
      expect(resourcesOf(`overlays/${overlay}/migrations/kustomization.yaml`), overlay).toEqual(['../../../base/migrations']);
    }
  });

  it('the gateway bench can still read the proxy heap flags from base/proxy.yaml', () => {
    // bench/gateway.bench.ts reads NODE_OPTIONS with exactly this expression.
    const match = /name: NODE_OPTIONS, value: "([^"]*)"/.exec(readFileSync(new URL('base/proxy.yaml', manifestRoot), 'utf8'));
    expect(match?.[1]).toMatch(/--max-old-space-size=\d+/);
  });
});

describe.each(overlayNames)('overlay %s', (overlay) => {
  const applied = renderOverlay(overlay);
  /** What is applied, and the example Secret applied beside it. */
  const everything = [...applied, secretsExample];

  it('every object validates against the Kubernetes, cert-manager or Prometheus Operator schema', () => {
    const invalid: string[] = [];
    for (const object of everything) {
      const SchemaClass = schemaClasses[`${object.apiVersion}/${object.kind}`];
      if (SchemaClass === undefined) invalid.push(`${object.apiVersion}/${object.kind} ${object.metadata.name}: no schema listed in this test`);
      else {
        try {
          new SchemaClass(object).validate();
        } catch (error) {
          invalid.push(`${object.kind} ${object.metadata.name}: ${(error as Error).message}`);
        }
      }
    }
    expect(invalid).toEqual([]);
  });

  it('every object lives in the namespace the certificates name', () => {
    const stray = everything.filter((object) => object.kind !== 'Namespace' && object.metadata.namespace !== namespace).map((object) => `${object.kind} ${object.metadata.name}`);
    expect(stray).toEqual([]);
    expect(applied.some((object) => object.kind === 'Namespace' && object.metadata.name === namespace)).toBe(true);
  });

  it('a Deployment and a Service for each service, and no other Deployment', () => {
    expect(deployments(applied).map(roleOf).sort()).toEqual([...roles].sort());
    for (const role of roles) expect(applied.some((object) => object.kind === 'Service' && object.metadata.name === role), role).toBe(true);
  });

  it('every pod (Deployments and migration Jobs) runs hardened: non-root, read-only root, no privilege escalation, no capabilities, RuntimeDefault seccomp, no token', () => {
    expect(workloads(applied).length).toBeGreaterThan(3);
    expect(workloads(applied).flatMap(podHardeningProblems)).toEqual([]);
  });

  it('the namespace enforces the restricted Pod Security Standard', () => {
    const namespaceObject = applied.find((object) => object.kind === 'Namespace')!;
    expect(namespaceObject.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it('every Deployment mounts its mTLS Secret read-only and points GRPC_TLS_* at it', () => {
    expect(deployments(applied).flatMap(tlsProblems)).toEqual([]);
  });

  it('servers listen on the pod IP, not on every interface', () => {
    for (const deployment of deployments(applied)) {
      for (const container of deployment.spec.template.spec.containers) {
        const bindHost = container.env.find((entry: any) => entry.name === 'BIND_HOST');
        expect(bindHost?.valueFrom?.fieldRef?.fieldPath, `${deployment.metadata.name}/${container.name}`).toBe('status.podIP');
      }
    }
  });

  it('nothing sets GRPC_INSECURE (plaintext gRPC is for development only)', () => {
    expect(everything.flatMap((object) => insecureSwitches(object, `${object.kind}/${object.metadata.name}`))).toEqual([]);
    expect(readFileSync(new URL('../Dockerfile', manifestRoot), 'utf8')).not.toMatch(/GRPC_INSECURE/);
  });

  it('cert-manager issues each service one certificate carrying its SPIFFE id and the names peers dial', () => {
    const certificates = applied.filter((object) => object.kind === 'Certificate');
    const issuers = applied.filter((object) => object.kind === 'Issuer');
    const ca = certificates.find((certificate) => certificate.spec.isCA === true);
    expect(ca?.spec.privateKey).toMatchObject({ algorithm: 'ECDSA', size: 256 });
    expect(issuers.find((issuer) => issuer.metadata.name === ca?.spec.issuerRef.name)?.spec.selfSigned).toBeDefined();
    const caIssuer = issuers.find((issuer) => issuer.spec.ca?.secretName === ca?.spec.secretName);
    expect(caIssuer).toBeDefined();
    for (const role of roles) {
      const certificate = certificates.find((candidate) => candidate.spec.secretName === `gateway-${role}-tls`);
      expect(certificate, role).toBeDefined();
      const service = applied.find((object) => object.kind === 'Service' && object.metadata.name === role)!;
      const serviceNamespace = service.metadata.namespace;
      expect(certificate!.spec.uris).toEqual([`spiffe://inr-gateway/${role}`]);
      expect(certificate!.spec.dnsNames).toEqual([role, `${role}.${serviceNamespace}`, `${role}.${serviceNamespace}.svc`, `${role}.${serviceNamespace}.svc.cluster.local`]);
      expect([...certificate!.spec.usages].sort()).toEqual(['client auth', 'digital signature', 'key encipherment', 'server auth']);
      expect(certificate!.spec.issuerRef).toMatchObject({ name: caIssuer!.metadata.name, kind: 'Issuer' });
      expect(certificate!.spec.duration).toMatch(/^\d+h$/);
      expect(parseInt(certificate!.spec.renewBefore, 10)).toBeLessThan(parseInt(certificate!.spec.duration, 10));
    }
  });

  it('every gRPC address a service dials is a name on the callee certificate', () => {
    const certificateNames = (role: Role) => applied.find((object) => object.kind === 'Certificate' && object.spec.secretName === `gateway-${role}-tls`)!.spec.dnsNames as string[];
    for (const deployment of deployments(applied)) {
      for (const entry of deployment.spec.template.spec.containers[0].env) {
        const match = /^(ADMIN|LEDGER)_GRPC_URL$/.exec(entry.name);
        if (match === null) continue;
        const host = String(entry.value).replace(/:\d+$/, '');
        expect(certificateNames(match[1]!.toLowerCase() as Role), `${deployment.metadata.name} ${entry.name}`).toContain(host);
      }
    }
  });

  it('the namespace denies all ingress and egress by default', () => {
    expect(defaultDenyProblems(applied)).toEqual([]);
  });

  it("only the proxy and the admin reach the ledger's gRPC port", () => {
    expect(ledgerGrpcIngressProblems(applied)).toEqual([]);
  });

  it('pod to pod: exactly proxy -> ledger, proxy -> admin and admin -> ledger, each on its gRPC port; no pod reaches another\'s metrics', () => {
    const allowed: string[] = [];
    const sources = [...roles, 'ledger-migrate', 'admin-migrate'];
    for (const from of sources) {
      for (const to of roles) {
        for (const port of [8080, 8081, 8082, ledgerGrpcPort, adminGrpcPort, ...Object.values(metricsPorts)]) {
          if (connectionAllowed(applied, labelledPod(from), gatewayPod(to), port)) allowed.push(`${from} -> ${to}:${port}`);
        }
      }
    }
    expect(allowed.sort()).toEqual(['admin -> ledger:50051', 'proxy -> admin:50052', 'proxy -> ledger:50051']);
  });

  it('from outside: the proxy HTTP port from anywhere, the admin HTTP port from the ingress controller, the metrics ports from the monitoring namespace, nothing else', () => {
    const internet: Endpoint = { address: '203.0.113.7' };
    const ingressController: Endpoint = { pod: { labels: { 'app.kubernetes.io/name': 'ingress-nginx' }, namespace: 'ingress-nginx', namespaceLabels: namespaceLabelsOf('ingress-nginx') } };
    const prometheus: Endpoint = { pod: { labels: { 'app.kubernetes.io/name': 'prometheus' }, namespace: 'monitoring', namespaceLabels: namespaceLabelsOf('monitoring') } };
    const otherPod: Endpoint = { pod: { labels: { app: 'something' }, namespace: 'default', namespaceLabels: namespaceLabelsOf('default') } };
    expect(connectionAllowed(applied, internet, gatewayPod('proxy'), 8080)).toBe(true);
    expect(connectionAllowed(applied, ingressController, gatewayPod('admin'), 8081)).toBe(true);
    expect(connectionAllowed(applied, internet, gatewayPod('admin'), 8081)).toBe(false);
    for (const source of [internet, ingressController, otherPod, prometheus]) {
      expect(connectionAllowed(applied, source, gatewayPod('ledger'), ledgerGrpcPort)).toBe(false);
      expect(connectionAllowed(applied, source, gatewayPod('ledger'), 8082)).toBe(false);
      expect(connectionAllowed(applied, source, gatewayPod('admin'), adminGrpcPort)).toBe(false);
    }
    for (const role of roles) {
      expect(connectionAllowed(applied, prometheus, gatewayPod(role), metricsPorts[role]), `monitoring -> ${role} metrics`).toBe(true);
      for (const source of [internet, ingressController, otherPod]) expect(connectionAllowed(applied, source, gatewayPod(role), metricsPorts[role]), `${role} metrics`).toBe(false);
    }
  });

  it('egress: DNS for all, PostgreSQL for ledger, admin and their migration Jobs, Redis for the proxy, public 443 for proxy and admin, SMTP 465/587 for the admin only', () => {
    const kubeDns: Endpoint = { pod: { labels: { 'k8s-app': 'kube-dns' }, namespace: 'kube-system', namespaceLabels: namespaceLabelsOf('kube-system') } };
    const postgres: Endpoint = { pod: { labels: { 'app.kubernetes.io/name': 'postgresql' }, namespace: 'postgres', namespaceLabels: namespaceLabelsOf('postgres') } };
    const redis: Endpoint = { pod: { labels: { 'app.kubernetes.io/name': 'redis' }, namespace: 'redis', namespaceLabels: namespaceLabelsOf('redis') } };
    for (const role of roles) {
      expect(connectionAllowed(applied, gatewayPod(role), kubeDns, 53, 'UDP'), `${role} DNS/UDP`).toBe(true);
      expect(connectionAllowed(applied, gatewayPod(role), kubeDns, 53, 'TCP'), `${role} DNS/TCP`).toBe(true);
      expect(connectionAllowed(applied, gatewayPod(role), postgres, 5432), `${role} PostgreSQL`).toBe(role !== 'proxy');
      expect(connectionAllowed(applied, gatewayPod(role), redis, 6379), `${role} Redis`).toBe(role === 'proxy');
      expect(connectionAllowed(applied, gatewayPod(role), { address: '203.0.113.7' }, 443), `${role} public 443`).toBe(role !== 'ledger');
      for (const smtp of [465, 587]) expect(connectionAllowed(applied, gatewayPod(role), { address: '203.0.113.7' }, smtp), `${role} public ${smtp}`).toBe(role === 'admin');
      expect(connectionAllowed(applied, gatewayPod(role), { address: '203.0.113.7' }, 80), `${role} public 80`).toBe(false);
      expect(connectionAllowed(applied, gatewayPod(role), { address: '203.0.113.7' }, 25), `${role} public 25`).toBe(false);
    }
    for (const job of workloads(applied).filter((workload) => workload.kind === 'Job')) {
      const pod = labelledPod(podLabels(job)[nameLabel]!);
      expect(connectionAllowed(applied, pod, kubeDns, 53, 'UDP'), `${job.metadata.name} DNS`).toBe(true);
      expect(connectionAllowed(applied, pod, postgres, 5432), `${job.metadata.name} PostgreSQL`).toBe(true);
      expect(connectionAllowed(applied, pod, redis, 6379), `${job.metadata.name} Redis`).toBe(false);
      expect(connectionAllowed(applied, pod, { address: '203.0.113.7' }, 443), `${job.metadata.name} public 443`).toBe(false);
    }
    // The SSRF guard one layer down: no private, loopback, link-local (metadata) or shared range.
    for (const address of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '127.0.0.1', '100.64.0.1']) {
      expect(connectionAllowed(applied, gatewayPod('proxy'), { address }, 443), address).toBe(false);
      // The admin calls customers' webhook URLs: the same ranges stay closed to it.
      for (const port of [443, 465, 587]) expect(connectionAllowed(applied, gatewayPod('admin'), { address }, port), `admin ${address}:${port}`).toBe(false);
    }
  });
});

describe('the manifest checks catch the mistakes they are for', () => {
  /** A fresh render of the production overlay, to break one thing in. */
  const copy = (): K8sObject[] => renderOverlay('production');
  const ledgerPolicyWith = (from: PolicyPeer[] | undefined, ports?: PolicyPort[]): K8sObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'too-open', namespace },
    spec: { podSelector: { matchLabels: { [nameLabel]: 'ledger' } }, policyTypes: ['Ingress'], ingress: [{ ...(from ? { from } : {}), ...(ports ? { ports } : {}) }] },
  });

  it.each([
    ['a writable root filesystem', (container: any) => { container.securityContext.readOnlyRootFilesystem = false; }],
    ['privilege escalation', (container: any) => { delete container.securityContext.allowPrivilegeEscalation; }],
    ['kept capabilities', (container: any) => { container.securityContext.capabilities = { drop: ['NET_RAW'] }; }],
    ['a root container', (container: any) => { container.securityContext.runAsUser = 0; }],
  ])('pod hardening: %s', (_mistake, breakIt) => {
    const objects = copy();
    breakIt(deployments(objects)[0]!.spec.template.spec.containers[0]);
    expect(workloads(objects).flatMap(podHardeningProblems)).not.toEqual([]);
  });

  it('pod hardening: a mounted service account token, no seccomp, no fsGroup, in a Deployment or a migration Job', () => {
    for (const pick of [(objects: K8sObject[]) => deployments(objects)[1]!, (objects: K8sObject[]) => objects.find((object) => object.kind === 'Job')!]) {
      for (const breakIt of [
        (pod: any) => { pod.automountServiceAccountToken = true; },
        (pod: any) => { delete pod.securityContext.seccompProfile; },
        (pod: any) => { delete pod.securityContext.fsGroup; },
        (pod: any) => { pod.securityContext.runAsNonRoot = false; },
      ]) {
        const objects = copy();
        breakIt(pick(objects).spec.template.spec);
        expect(workloads(objects).flatMap(podHardeningProblems)).not.toEqual([]);
      }
    }
  });

  it('TLS: a missing mount, a writable mount, a missing variable', () => {
    for (const breakIt of [
      (pod: any) => { pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter((mount: any) => mount.mountPath !== tlsDir); },
      (pod: any) => { pod.containers[0].volumeMounts.find((mount: any) => mount.mountPath === tlsDir).readOnly = false; },
      (pod: any) => { pod.containers[0].env = pod.containers[0].env.filter((entry: any) => entry.name !== 'GRPC_TLS_KEY_FILE'); },
      (pod: any) => { pod.volumes.find((volume: any) => volume.secret).secret.secretName = 'gateway-other-tls'; },
    ]) {
      const objects = copy();
      breakIt(deployments(objects)[2]!.spec.template.spec);
      expect(deployments(objects).flatMap(tlsProblems)).not.toEqual([]);
    }
  });

  it('default deny: missing, or only for ingress', () => {
    const withoutDeny = copy().filter((object) => object.metadata.name !== 'default-deny-all');
    expect(defaultDenyProblems(withoutDeny)).not.toEqual([]);
    const ingressOnly = copy();
    ingressOnly.find((object) => object.metadata.name === 'default-deny-all')!.spec.policyTypes = ['Ingress'];
    expect(defaultDenyProblems(ingressOnly)).not.toEqual([]);
  });

  it.each([
    ['anywhere (no from)', ledgerPolicyWith(undefined, [{ port: ledgerGrpcPort }])],
    ['every pod of the namespace', ledgerPolicyWith([{ podSelector: {} }], [{ port: 'grpc' }])],
    ['every gateway pod (ledger included)', ledgerPolicyWith([{ podSelector: { matchLabels: { 'app.kubernetes.io/part-of': namespace } } }])],
    ['pods of another namespace named proxy', ledgerPolicyWith([{ namespaceSelector: {}, podSelector: { matchLabels: { [nameLabel]: 'proxy' } } }], [{ port: ledgerGrpcPort }])],
    ['an address block', ledgerPolicyWith([{ ipBlock: { cidr: '10.0.0.0/8' } }], [{ port: 50000, endPort: 50100 }])],
  ])("ledger gRPC: a rule admitting %s", (_mistake, policy) => {
    expect(ledgerGrpcIngressProblems([...copy(), policy])).not.toEqual([]);
  });

  it('ledger gRPC: no policy isolating the ledger at all', () => {
    expect(ledgerGrpcIngressProblems(copy().filter((object) => object.kind !== 'NetworkPolicy'))).not.toEqual([]);
  });

  it('ledger gRPC: a rule for another port is no concern of this check', () => {
    expect(ledgerGrpcIngressProblems([...copy(), ledgerPolicyWith(undefined, [{ port: 8082 }])])).toEqual([]);
  });

  it('GRPC_INSECURE in a container, a ConfigMap or as a value reference', () => {
    const objects = copy();
    deployments(objects)[0]!.spec.template.spec.containers[0].env.push({ name: 'GRPC_INSECURE', value: 'true' });
    expect(objects.flatMap((object) => insecureSwitches(object))).not.toEqual([]);
    expect(insecureSwitches({ kind: 'ConfigMap', data: { GRPC_INSECURE: 'true' } })).not.toEqual([]);
  });

  it('the connection model: the proxy loses the ledger without its egress rule', () => {
    const objects = copy();
    const egress = objects.find((object) => object.metadata.name === 'proxy-egress')!;
    egress.spec.egress = egress.spec.egress.filter((rule: PolicyRule) => !rule.to?.some((peer) => peer.podSelector?.matchLabels?.[nameLabel] === 'ledger'));
    expect(connectionAllowed(objects, gatewayPod('proxy'), gatewayPod('ledger'), ledgerGrpcPort)).toBe(false);
  });

  it('the connection model: a metrics rule on every port lets the monitoring namespace reach the ledger\'s gRPC', () => {
    const objects = copy();
    const metricsIngress = objects.find((object) => object.metadata.name === 'metrics-ingress')!;
    delete metricsIngress.spec.ingress[0].ports;
    const prometheus: Endpoint = { pod: { labels: {}, namespace: 'monitoring', namespaceLabels: namespaceLabelsOf('monitoring') } };
    expect(connectionAllowed(objects, prometheus, gatewayPod('ledger'), ledgerGrpcPort)).toBe(true);
  });
});
