/**
 * deploy/kubernetes's layout, and every rendered object validated strictly against the schema of
 * its kind (Kubernetes, cert-manager, Prometheus Operator): a wrong type, a missing required field
 * and a field the schema does not define all fail, so a misspelt or misplaced field cannot ride
 * along unnoticed (the API server would drop or refuse it at apply time). The last block shows
 * the check rejecting unknown fields at several depths, with the field's path.
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
import { manifestRoot, overlayNames, readManifestFile, renderOverlay, secretsExample, type K8sObject } from './rendered-manifests.ts';
import { validateStrictly, type SchemaClass } from './strict-schema.ts';

/** Schema classes by `apiVersion/kind`; an unlisted kind fails the test so it gets one. */
const schemaClasses: Record<string, SchemaClass> = {
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

/** Every schema problem of a set of objects: an unlisted kind, a schema violation, a field the schema does not define (by path). */
function schemaProblems(objects: K8sObject[]): string[] {
  return objects.flatMap((object) => {
    const where = `${object.kind} ${object.metadata.name}`;
    const schemaClass = schemaClasses[`${object.apiVersion}/${object.kind}`];
    if (schemaClass === undefined) return [`${object.apiVersion}/${object.kind} ${object.metadata.name}: no schema listed in this test`];
    const { errors, unknownFields } = validateStrictly(schemaClass, object);
    return [...errors.map((error) => `${where}: ${error}`), ...unknownFields.map((path) => `${where}: ${path} is not a field of ${object.kind}`)];
  });
}

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
  it('every object (and the example Secret) validates strictly against the Kubernetes, cert-manager or Prometheus Operator schema', () => {
    const objects = [...renderOverlay(overlay), secretsExample];
    expect(objects.length).toBeGreaterThan(20);
    expect(schemaProblems(objects)).toEqual([]);
  });
});

describe('the schema check catches the mistakes it is for', () => {
  const objectOf = (objects: K8sObject[], kind: string): K8sObject => objects.find((object) => object.kind === kind)!;

  it.each([
    ['a Deployment container', 'Deployment', (object: K8sObject) => { object.spec.template.spec.containers[0].bogus = 1; }, '/spec/template/spec/containers/0/bogus'],
    ['a Deployment pod security context', 'Deployment', (object: K8sObject) => { object.spec.template.spec.securityContext.runAsUserr = 1000; }, '/spec/template/spec/securityContext/runAsUserr'],
    ['a Service spec', 'Service', (object: K8sObject) => { object.spec.bogus = 'x'; }, '/spec/bogus'],
    ['a PrometheusRule rule', 'PrometheusRule', (object: K8sObject) => { object.spec.groups[0].rules[0].bogus = true; }, '/spec/groups/0/rules/0/bogus'],
    ['a Certificate spec', 'Certificate', (object: K8sObject) => { object.spec.bogus = { nested: 1 }; }, '/spec/bogus'],
    ['a top-level field', 'NetworkPolicy', (object: K8sObject) => { object.specs = object.spec; }, '/specs'],
  ])('an unknown field in %s is rejected with its path', (_where, kind, breakIt, path) => {
    const objects = renderOverlay('production');
    const object = objectOf(objects, kind);
    breakIt(object);
    expect(schemaProblems(objects)).toEqual([`${kind} ${object.metadata.name}: ${path} is not a field of ${kind}`]);
  });

  it('a wrong type and a kind without a schema are rejected too', () => {
    const objects = renderOverlay('production');
    objectOf(objects, 'Deployment').spec.template.spec.containers[0].ports[0].containerPort = 'http';
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra' } });
    const problems = schemaProblems(objects).join('\n');
    expect(problems).toContain('containerPort must be integer');
    expect(problems).toContain('v1/ConfigMap extra: no schema listed');
  });

  it('maps stay open: labels, annotations, resource limits and Secret data take any key', () => {
    const objects = [...renderOverlay('production'), structuredClone(secretsExample)];
    const deployment = objectOf(objects, 'Deployment');
    deployment.metadata.labels = { ...deployment.metadata.labels, 'example.com/team': 'payments' };
    deployment.spec.template.metadata.annotations = { 'example.com/note': 'x' };
    deployment.spec.template.spec.containers[0].resources.limits['example.com/gpu'] = '1';
    objectOf(objects, 'Secret').stringData.ANY_NEW_KEY = 'value';
    expect(schemaProblems(objects)).toEqual([]);
  });
});
