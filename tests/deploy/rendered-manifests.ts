/**
 * deploy/kubernetes as the manifest tests see it: every overlay rendered by the real kustomize
 * (`kubectl kustomize`, what `kubectl apply -k` runs), the example Secret, and the small
 * vocabulary (roles, label selectors, workloads) the checks share.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** deploy/kubernetes/ */
export const manifestRoot = new URL('../../deploy/kubernetes/', import.meta.url);
/** The namespace every object lives in and the certificates name. */
export const namespace = 'inr-gateway';
/** The services of the gateway, as named in their labels, Services, certificates and SPIFFE ids. */
export const roles = ['proxy', 'admin', 'ledger'] as const;
/** A service of the gateway. */
export type Role = (typeof roles)[number];
/** The label that names a workload's pods. */
export const nameLabel = 'app.kubernetes.io/name';

/** A rendered Kubernetes object; only the fields the checks read are typed. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}

/** Parses a multi-document YAML file as Kubernetes does (YAML 1.1: `0440` is octal, `yes` a boolean). */
function parseYamlDocuments(text: string, where: string): any[] {
  return parseAllDocuments(text, { version: '1.1' }).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${where}: ${document.errors.map((error) => error.message).join('; ')}`);
    const value = document.toJS() as unknown;
    return value === null || value === undefined ? [] : [value];
  });
}
/** A label selector (matchLabels, matchExpressions) as Kubernetes defines it. */
export type LabelSelector = { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };

/** The overlays under deploy/kubernetes/overlays, each a directory `kubectl apply -k` takes. */
export const overlayNames: string[] = readdirSync(new URL('overlays/', manifestRoot), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();

const rendered = new Map<string, K8sObject[]>();
/** What `kubectl apply -k deploy/kubernetes/overlays/<name>` applies (a fresh copy each call, to break things in). */
export function renderOverlay(name: string): K8sObject[] {
  if (!rendered.has(name)) {
    // The real tool (kubectl ships kustomize); missing, the manifest tests fail (.ci/run checks first).
    let output: string;
    try {
      output = execFileSync('kubectl', ['kustomize', fileURLToPath(new URL(`overlays/${name}`, manifestRoot))], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('kubectl is not on PATH: the manifest tests render the overlays with `kubectl kustomize` (kustomize v5)');
      throw error;
    }
    rendered.set(name, parseYamlDocuments(output, `kubectl kustomize overlays/${name}`) as K8sObject[]);
  }
  return structuredClone(rendered.get(name)!);
}

/** Parses one YAML file under deploy/kubernetes. */
export function readManifestFile(relativePath: string): K8sObject[] {
  return parseYamlDocuments(readFileSync(new URL(relativePath, manifestRoot), 'utf8'), relativePath) as K8sObject[];
}

/** The example Secret (deploy/kubernetes/secrets.example.yaml), applied by hand and never by a kustomization. */
export const secretsExample: K8sObject = readManifestFile('secrets.example.yaml')[0]!;

export const deployments = (objects: K8sObject[]): K8sObject[] => objects.filter((object) => object.kind === 'Deployment');
export const jobs = (objects: K8sObject[]): K8sObject[] => objects.filter((object) => object.kind === 'Job');
/** Everything that runs pods: Deployments and Jobs. */
export const workloads = (objects: K8sObject[]): K8sObject[] => objects.filter((object) => object.kind === 'Deployment' || object.kind === 'Job');
export const podLabels = (workload: K8sObject): Record<string, string> => workload.spec.template.metadata?.labels ?? {};
export const roleOf = (deployment: K8sObject): Role => podLabels(deployment)[nameLabel] as Role;
/** The Deployment of a role. */
export const deploymentOf = (objects: K8sObject[], role: Role): K8sObject | undefined => deployments(objects).find((deployment) => roleOf(deployment) === role);

/** Whether a label selector selects a set of labels (an empty selector selects everything). */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const expression of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, expression.key);
    const value = labels[expression.key];
    const values = expression.values ?? [];
    const ok =
      expression.operator === 'In' ? has && values.includes(value!)
      : expression.operator === 'NotIn' ? !has || !values.includes(value!)
      : expression.operator === 'Exists' ? has
      : expression.operator === 'DoesNotExist' ? !has
      : false;
    if (!ok) return false;
  }
  return true;
}

/** The value an env entry of a container sets literally, or undefined (unset, or from a reference). */
export function envValue(container: any, name: string): string | undefined {
  return (container.env ?? []).find((entry: any) => entry.name === name)?.value;
}
