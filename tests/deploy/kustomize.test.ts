/**
 * The kustomize subset (tests/deploy/kustomize.ts) on small kustomizations written here, each
 * result spelled out as `kustomize build` gives it for the same input.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyJsonPatch, renderKustomization, strategicMerge } from './kustomize.ts';

const roots: string[] = [];
afterAll(() => { for (const root of roots) rmSync(root, { recursive: true, force: true }); });

/** Writes files (path → text) under a new temporary directory and returns it. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'kustomize-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, labels: { app: web } }
spec:
  replicas: 3
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: shop:latest
          env:
            - { name: A, value: "1" }
            - { name: B, value: "2" }
          ports: [{ name: http, containerPort: 8080 }]
          resources: { requests: { cpu: 100m, memory: 64Mi }, limits: { memory: 128Mi } }
        - name: sidecar
          image: registry.example.com:5000/tools/sidecar:1.0
`;
const service = `apiVersion: v1
kind: Service
metadata: { name: web }
spec:
  selector: { app: web }
  ports: [{ name: http, port: 80, targetPort: http }]
`;
const job = `apiVersion: batch/v1
kind: Job
metadata: { name: migrate }
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{ name: migrate, image: shop:latest }]
`;

describe('renderKustomization', () => {
  it('an overlay over a base: namespace, patches merged by container and env name, replicas, images, a suffixed Job', () => {
    const root = tree({
      'base/kustomization.yaml': 'resources: [web.yaml]\nnamespace: shop\n',
      'base/web.yaml': `${deployment}---\n${service}`,
      'jobs/kustomization.yaml': 'resources: [job.yaml]\nnameSuffix: -1.2.3\n',
      'jobs/job.yaml': job,
      'prod/kustomization.yaml': [
        'resources: [../base, ../jobs]',
        'namespace: shop',
        'replicas: [{ name: web, count: 5 }]',
        'images:',
        '  - { name: shop, newName: registry.example.com/shop, newTag: "1.2.3" }',
        '  - { name: registry.example.com:5000/tools/sidecar, digest: "sha256:abc" }',
        'patches:',
        '  - path: web-patch.yaml',
        '  - target: { kind: Service, name: web }',
        '    patch: |-',
        '      - { op: replace, path: /spec/ports/0/port, value: 8080 }',
        '      - { op: add, path: /metadata/annotations, value: { a~b/c: x } }',
        '',
      ].join('\n'),
      'prod/web-patch.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - { name: B, value: "two" }
            - { name: C, value: "3" }
            - { name: A, $patch: delete }
          resources: { requests: { cpu: 2 }, limits: null }
`,
    });
    const objects = renderKustomization(join(root, 'prod'));
    expect(objects.map((object) => `${object.kind}/${object.metadata.namespace}/${object.metadata.name}`)).toEqual(['Deployment/shop/web', 'Service/shop/web', 'Job/shop/migrate-1.2.3']);
    const [web, svc, migrate] = objects;
    expect(web!.spec.replicas).toBe(5);
    const [webContainer, sidecar] = web!.spec.template.spec.containers;
    expect(webContainer).toEqual({
      name: 'web',
      image: 'registry.example.com/shop:1.2.3',
      env: [{ name: 'B', value: 'two' }, { name: 'C', value: '3' }],
      ports: [{ name: 'http', containerPort: 8080 }],
      resources: { requests: { cpu: 2, memory: '64Mi' } },
    });
    expect(sidecar.image).toBe('registry.example.com:5000/tools/sidecar@sha256:abc');
    expect(svc!.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http' }]);
    expect(svc!.metadata.annotations).toEqual({ 'a~b/c': 'x' });
    expect(migrate!.spec.template.spec.containers[0].image).toBe('registry.example.com/shop:1.2.3');
  });

  it('a strategic merge patch with $patch: delete removes the resource', () => {
    const root = tree({
      'kustomization.yaml': 'resources: [web.yaml]\npatches:\n  - patch: |-\n      apiVersion: v1\n      kind: Service\n      metadata: { name: web }\n      $patch: delete\n',
      'web.yaml': `${deployment}---\n${service}`,
    });
    expect(renderKustomization(root).map((object) => object.kind)).toEqual(['Deployment']);
  });

  it.each([
    ['a field it does not implement', { 'kustomization.yaml': 'resources: [web.yaml]\ncommonLabels: { a: b }\n', 'web.yaml': service }, /commonLabels is not supported/],
    ['a missing resource', { 'kustomization.yaml': 'resources: [nope.yaml]\n' }, /nope.yaml does not exist/],
    ['the same object twice', { 'kustomization.yaml': 'resources: [a.yaml, b.yaml]\n', 'a.yaml': service, 'b.yaml': service }, /defined twice/],
    ['a patch that selects nothing', { 'kustomization.yaml': 'resources: [web.yaml]\npatches: [{ path: p.yaml }]\n', 'web.yaml': service, 'p.yaml': 'apiVersion: v1\nkind: Service\nmetadata: { name: other }\nspec: { type: NodePort }\n' }, /selects no resource/],
    ['replicas of a Deployment that is not there', { 'kustomization.yaml': 'resources: [web.yaml]\nreplicas: [{ name: api, count: 2 }]\n', 'web.yaml': service }, /replicas for api/],
    ['a suffix on a kind others refer to by name', { 'kustomization.yaml': 'resources: [web.yaml]\nnameSuffix: -v2\n', 'web.yaml': service }, /would need name references rewritten/],
    ['a directory without a kustomization', { 'kustomization.yaml': 'resources: [sub]\n', 'sub/web.yaml': service }, /no kustomization.yaml/],
  ])('refuses %s', (_case, files, message) => {
    expect(() => renderKustomization(tree(files))).toThrow(message);
  });
});

describe('strategicMerge and applyJsonPatch', () => {
  it('merges Service ports by port and container ports by containerPort, replaces lists without a merge key', () => {
    expect(strategicMerge({ ports: [{ port: 80, name: 'a' }, { port: 81 }] }, { ports: [{ port: 81, name: 'b' }] })).toEqual({ ports: [{ port: 80, name: 'a' }, { port: 81, name: 'b' }] });
    expect(strategicMerge({ ports: [{ containerPort: 80 }] }, { ports: [{ containerPort: 90, name: 'm' }] })).toEqual({ ports: [{ containerPort: 80 }, { containerPort: 90, name: 'm' }] });
    expect(strategicMerge({ args: ['a', 'b'], metrics: [{ type: 'Resource' }] }, { args: ['c'], metrics: [{ type: 'Pods' }] })).toEqual({ args: ['c'], metrics: [{ type: 'Pods' }] });
  });

  it('refuses directives it does not implement and pointers that lead nowhere', () => {
    expect(() => strategicMerge({}, { $patch: 'replace' })).toThrow(/not supported/);
    expect(() => strategicMerge({}, { a: { $retainKeys: ['b'] } })).toThrow(/not supported/);
    expect(() => applyJsonPatch({ a: [] }, [{ op: 'replace', path: '/a/0', value: 1 }])).toThrow(/out of range/);
    expect(() => applyJsonPatch({ a: {} }, [{ op: 'remove', path: '/a/b' }])).toThrow(/does not exist/);
    expect(applyJsonPatch({ a: [1, 2] }, [{ op: 'add', path: '/a/-', value: 3 }, { op: 'remove', path: '/a/0' }])).toEqual({ a: [2, 3] });
  });
});
