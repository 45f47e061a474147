/**
 * The way in, on every rendered overlay (docs/deploy.md, "The admin behind an ingress"): the
 * Ingresses route the dashboard, its sign-in and API, the Razorpay webhook and the public API
 * (/v1, on a host of its own) to the right Service ports, and nothing else (the probes stay
 * inside); the webhook's Ingress carries no allow-list; every host has TLS; the dashboard's host
 * is the admin's ADMIN_PUBLIC_URL (https), ADMIN_TRUST_PROXY believes exactly the one hop in
 * front; and the NetworkPolicies admit the ingress controller's namespace to every backend port.
 * Each check returns problems, and the last block proves each catches its mistake.
 */
import { describe, expect, it } from 'vitest';
import { adminConfigSchema } from '@gateway/admin';
import { deploymentOf, envValue, overlayNames, podLabels, renderOverlay, selects, type K8sObject } from './rendered-manifests.ts';

/** The ingress controller's namespace, as the NetworkPolicies name it (docs/deploy.md, "What to adapt"). */
const controllerNamespace = 'ingress-nginx';
/** ingress-nginx's allow-list annotations (the older and the newer spelling). */
const allowListAnnotations = ['nginx.ingress.kubernetes.io/whitelist-source-range', 'nginx.ingress.kubernetes.io/allowlist-source-range'];

/** One path an Ingress routes: where from and to which Service port. */
interface Route {
  ingress: K8sObject;
  host: string;
  path: string;
  pathType: string;
  service: string;
  port: string | number;
}

/** What must be reachable from outside: the path, its match, and the Service behind it. */
const requiredRoutes = [
  { path: '/', pathType: 'Exact', service: 'admin', why: 'the dashboard page' },
  { path: '/assets', pathType: 'Prefix', service: 'admin', why: 'the dashboard\'s scripts and styles' },
  { path: '/auth', pathType: 'Prefix', service: 'admin', why: 'sign-in, session and one-time links' },
  { path: '/admin/v1', pathType: 'Prefix', service: 'admin', why: 'the API the dashboard calls, its live WebSocket included' },
  { path: '/webhooks/razorpay', pathType: 'Exact', service: 'admin', why: 'Razorpay\'s webhooks' },
  { path: '/v1', pathType: 'Prefix', service: 'proxy', why: 'the public API' },
] as const;

const ingresses = (objects: K8sObject[]): K8sObject[] => objects.filter((object) => object.kind === 'Ingress');

/** Every path of every Ingress. */
function routesOf(objects: K8sObject[]): Route[] {
  return ingresses(objects).flatMap((ingress) => (ingress.spec.rules ?? []).flatMap((rule: any) => (rule.http?.paths ?? []).map((entry: any) => ({
    ingress, host: rule.host, path: entry.path, pathType: entry.pathType,
    service: entry.backend?.service?.name, port: entry.backend?.service?.port?.name ?? entry.backend?.service?.port?.number,
  }))));
}

/** The admin container of the admin Deployment. */
const adminContainer = (objects: K8sObject[]) => deploymentOf(objects, 'admin')!.spec.template.spec.containers.find((container: any) => container.name === 'admin');

/** The required routes exist (the webhook's without an allow-list, /v1 on a host apart), nothing else is routed, every host has TLS and class nginx. */
function routeProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const routes = routesOf(objects);
  for (const required of requiredRoutes) {
    const found = routes.filter((route) => route.path === required.path && route.pathType === required.pathType && route.service === required.service);
    if (found.length === 0) problems.push(`no ${required.pathType} ${required.path} to ${required.service} (${required.why})`);
  }
  for (const route of routes) {
    if (!requiredRoutes.some((required) => required.path === route.path && required.pathType === route.pathType && required.service === route.service)) {
      problems.push(`Ingress ${route.ingress.metadata.name} routes ${route.pathType} ${route.path} to ${route.service}, which nothing outside needs`);
    }
  }
  for (const webhook of routes.filter((route) => route.path === '/webhooks/razorpay')) {
    const annotations = webhook.ingress.metadata.annotations ?? {};
    if (allowListAnnotations.some((name) => name in annotations)) problems.push(`Ingress ${webhook.ingress.metadata.name} (the Razorpay webhook) has an allow-list: payments would stop`);
    if (routes.some((route) => route.ingress === webhook.ingress && route.path !== webhook.path)) problems.push(`Ingress ${webhook.ingress.metadata.name} carries more than the webhook: an allow-list on the dashboard would block it`);
  }
  const apiHosts = new Set(routes.filter((route) => route.service === 'proxy').map((route) => route.host));
  const dashboardHosts = new Set(routes.filter((route) => route.service === 'admin').map((route) => route.host));
  for (const host of apiHosts) if (dashboardHosts.has(host)) problems.push(`host ${host} serves both the API and the dashboard: /v1 belongs on a host of its own`);
  for (const ingress of ingresses(objects)) {
    if (ingress.spec.ingressClassName !== 'nginx') problems.push(`Ingress ${ingress.metadata.name}: ingressClassName is ${ingress.spec.ingressClassName}, not nginx`);
    const tlsHosts = new Set((ingress.spec.tls ?? []).filter((tls: any) => typeof tls.secretName === 'string').flatMap((tls: any) => tls.hosts ?? []));
    for (const rule of ingress.spec.rules ?? []) if (!tlsHosts.has(rule.host)) problems.push(`Ingress ${ingress.metadata.name}: host ${rule.host} has no TLS Secret`);
  }
  return problems;
}

/** The dashboard's hosts are ADMIN_PUBLIC_URL's (https, no port or path); ADMIN_TRUST_PROXY believes the one hop in front, or listed proxies. */
function adminAddressProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const container = adminContainer(objects);
  const publicUrl = envValue(container, 'ADMIN_PUBLIC_URL');
  if (publicUrl === undefined || !URL.canParse(publicUrl)) return ['the admin has no literal ADMIN_PUBLIC_URL'];
  const url = new URL(publicUrl);
  if (url.protocol !== 'https:') problems.push(`ADMIN_PUBLIC_URL ${publicUrl} is not https: the session cookie would lose Secure and __Host-`);
  if (url.port !== '' || url.pathname !== '/') problems.push(`ADMIN_PUBLIC_URL ${publicUrl} has a port or a path, which an Ingress host cannot carry`);
  for (const ingress of ingresses(objects).filter((candidate) => routesOf([candidate]).some((route) => route.service === 'admin'))) {
    const hosts = [...(ingress.spec.rules ?? []).map((rule: any) => rule.host), ...(ingress.spec.tls ?? []).flatMap((tls: any) => tls.hosts ?? [])];
    for (const host of hosts) if (host !== url.hostname) problems.push(`Ingress ${ingress.metadata.name} serves ${host}, but ADMIN_PUBLIC_URL is ${publicUrl}`);
  }
  const trust = adminConfigSchema.shape.ADMIN_TRUST_PROXY.safeParse(envValue(container, 'ADMIN_TRUST_PROXY'));
  if (!trust.success || trust.data === false) problems.push('ADMIN_TRUST_PROXY is unset or false: every sign-in would come from the controller\'s address');
  else if (typeof trust.data === 'number' && trust.data !== 1) problems.push(`ADMIN_TRUST_PROXY=${trust.data} hops: there is one (the controller); more would believe a client's own X-Forwarded-For`);
  return problems;
}

/** The container port (number and name) a Service port sends to. */
function backendPort(objects: K8sObject[], serviceName: string, port: string | number): { number: number; name: string | undefined; labels: Record<string, string> } | undefined {
  const service = objects.find((object) => object.kind === 'Service' && object.metadata.name === serviceName);
  const servicePort = service?.spec.ports.find((candidate: any) => candidate.name === port || candidate.port === port);
  const deployment = objects.find((object) => object.kind === 'Deployment' && selects({ matchLabels: service?.spec.selector }, podLabels(object)));
  if (servicePort === undefined || deployment === undefined) return undefined;
  for (const container of deployment.spec.template.spec.containers) {
    for (const containerPort of container.ports ?? []) {
      if (containerPort.name === servicePort.targetPort || containerPort.containerPort === servicePort.targetPort) {
        return { number: containerPort.containerPort, name: containerPort.name, labels: podLabels(deployment) };
      }
    }
  }
  return undefined;
}

/** Every backend's Service port exists, and some NetworkPolicy admits the controller's namespace to its pod port. */
function networkPolicyProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const policies = objects.filter((object) => object.kind === 'NetworkPolicy' && (object.spec.policyTypes ?? []).includes('Ingress'));
  const seen = new Set<string>();
  for (const route of routesOf(objects)) {
    const key = `${route.service}:${route.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const target = backendPort(objects, route.service, route.port);
    if (target === undefined) {
      problems.push(`Ingress ${route.ingress.metadata.name}: Service ${route.service} port ${route.port} reaches no container port`);
      continue;
    }
    const admitted = policies.some((policy) => selects(policy.spec.podSelector, target.labels) && (policy.spec.ingress ?? []).some((rule: any) => {
      const fromController = rule.from === undefined || rule.from.some((peer: any) => peer.podSelector === undefined
        && selects(peer.namespaceSelector, { 'kubernetes.io/metadata.name': controllerNamespace }));
      const onPort = rule.ports === undefined || rule.ports.some((port: any) => port.port === target.number || (target.name !== undefined && port.port === target.name));
      return fromController && onPort;
    }));
    if (!admitted) problems.push(`no NetworkPolicy admits namespace ${controllerNamespace} to ${route.service} port ${target.number}`);
  }
  return problems;
}

describe.each(overlayNames)('overlay %s: the way in', (overlay) => {
  const objects = renderOverlay(overlay);

  it('routes the dashboard, sign-in, its API, the webhook and /v1, nothing else, each host over TLS', () => {
    expect(routeProblems(objects)).toEqual([]);
  });

  it('serves the dashboard at ADMIN_PUBLIC_URL (https) and believes the controller\'s X-Forwarded-For, one hop', () => {
    expect(adminAddressProblems(objects)).toEqual([]);
  });

  it('admits the ingress controller\'s namespace to every backend port', () => {
    expect(networkPolicyProblems(objects)).toEqual([]);
  });
});

describe('each check catches its mistake', () => {
  const broken = (breakIt: (objects: K8sObject[]) => void): K8sObject[] => {
    const objects = renderOverlay('production');
    breakIt(objects);
    return objects;
  };
  const ingress = (objects: K8sObject[], name: string) => ingresses(objects).find((object) => object.metadata.name === name)!;
  const setEnv = (objects: K8sObject[], name: string, value: string | undefined) => {
    const container = adminContainer(objects);
    container.env = container.env.filter((entry: any) => entry.name !== name);
    if (value !== undefined) container.env.push({ name, value });
  };

  it.each([
    ['the webhook dropped', (objects: K8sObject[]) => { ingress(objects, 'admin-webhooks').spec.rules[0].http.paths = []; }],
    ['/v1 dropped', (objects: K8sObject[]) => { ingress(objects, 'proxy').spec.rules[0].http.paths = []; }],
    ['a catch-all to the admin (the probes public)', (objects: K8sObject[]) => { ingress(objects, 'admin').spec.rules[0].http.paths[0].pathType = 'Prefix'; }],
    ['an allow-list on the webhook', (objects: K8sObject[]) => { const { metadata } = ingress(objects, 'admin-webhooks'); metadata.annotations = { ...metadata.annotations, 'nginx.ingress.kubernetes.io/whitelist-source-range': '10.0.0.0/8' }; }],
    ['the API on the dashboard\'s host', (objects: K8sObject[]) => { ingress(objects, 'proxy').spec.rules[0].host = ingress(objects, 'admin').spec.rules[0].host; }],
    ['a host without TLS', (objects: K8sObject[]) => { ingress(objects, 'proxy').spec.tls = []; }],
  ])('routes: %s', (_mistake, breakIt) => {
    expect(routeProblems(broken(breakIt))).not.toEqual([]);
  });

  it.each([
    ['ADMIN_PUBLIC_URL over http', (objects: K8sObject[]) => setEnv(objects, 'ADMIN_PUBLIC_URL', 'http://dashboard.example.com')],
    ['ADMIN_PUBLIC_URL naming another host', (objects: K8sObject[]) => setEnv(objects, 'ADMIN_PUBLIC_URL', 'https://elsewhere.example.com')],
    ['ADMIN_PUBLIC_URL unset', (objects: K8sObject[]) => setEnv(objects, 'ADMIN_PUBLIC_URL', undefined)],
    ['ADMIN_TRUST_PROXY unset', (objects: K8sObject[]) => setEnv(objects, 'ADMIN_TRUST_PROXY', undefined)],
    ['ADMIN_TRUST_PROXY trusting two hops', (objects: K8sObject[]) => setEnv(objects, 'ADMIN_TRUST_PROXY', '2')],
  ])('addresses: %s', (_mistake, breakIt) => {
    expect(adminAddressProblems(broken(breakIt))).not.toEqual([]);
  });

  it.each([
    ['the admin admitting another namespace', (objects: K8sObject[]) => {
      const policy = objects.find((object) => object.kind === 'NetworkPolicy' && object.metadata.name === 'admin-ingress')!;
      policy.spec.ingress[1].from[0].namespaceSelector.matchLabels['kubernetes.io/metadata.name'] = 'elsewhere';
    }],
    ['a backend port the Service lacks', (objects: K8sObject[]) => { ingress(objects, 'proxy').spec.rules[0].http.paths[0].backend.service.port = { name: 'grpc' }; }],
  ])('network policies: %s', (_mistake, breakIt) => {
    expect(networkPolicyProblems(broken(breakIt))).not.toEqual([]);
  });
});
