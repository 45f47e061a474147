/**
 * The subset of kustomize (https://kubectl.docs.kubernetes.io/references/kustomize/) that
 * deploy/kubernetes uses, done in TypeScript so the manifest tests render every overlay without a
 * kustomize or kubectl binary (none is published on npm that runs offline; docs/decisions.md).
 *
 * Supported kustomization fields: `resources` (files and directories holding a kustomization),
 * `namespace`, `nameSuffix`, `patches` (strategic merge for the fields listed in `mergeKeys`, or
 * JSON 6902 add/remove/replace, with or without a `target`), `replicas` and `images`. Every other
 * field throws, so a kustomization can never use something this renderer silently ignores.
 * Transformers run in kustomize's order: patches, namespace, name suffix, replicas, images.
 * Differences that do not matter here: output keeps input order (kustomize sorts by kind), and
 * name references are not rewritten (a suffix on a kind that others refer to by name throws).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** A Kubernetes object as rendered; only the fields the renderer reads are typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}

/** A kustomize patch target selector (the fields this renderer honours). */
interface PatchTarget { group?: string; version?: string; kind?: string; name?: string; namespace?: string }

const supportedFields = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'nameSuffix', 'patches', 'replicas', 'images']);
const kustomizationFileNames = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** Kinds that have no namespace: the namespace transformer leaves them alone. */
const clusterScopedKinds = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'PriorityClass', 'StorageClass', 'ClusterIssuer', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'PersistentVolume', 'APIService']);
/** Kinds kustomize never prefixes or suffixes. */
const unsuffixedKinds = new Set(['Namespace', 'CustomResourceDefinition', 'APIService']);
/** Kinds other objects refer to by name: a suffix would need those references rewritten, which this renderer does not do. */
const referencedKinds = new Set(['ConfigMap', 'Secret', 'Service', 'ServiceAccount', 'PersistentVolumeClaim', 'Deployment', 'StatefulSet', 'Issuer', 'Certificate', 'Role', 'ClusterRole']);
/** Kinds whose `spec.replicas` the replicas transformer sets. */
const scalableKinds = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'ReplicationController']);

/**
 * Strategic merge keys of the object lists that Kubernetes merges element by element
 * (`patchStrategy: merge` in its API types); every other list is replaced by the patch's.
 */
const mergeKeys: Record<string, string> = {
  containers: 'name', initContainers: 'name', ephemeralContainers: 'name', env: 'name', volumes: 'name',
  volumeMounts: 'mountPath', imagePullSecrets: 'name', topologySpreadConstraints: 'topologyKey', hostAliases: 'ip',
  resourceClaims: 'name', schedulingGates: 'name', volumeDevices: 'devicePath',
};

/** Parses a multi-document YAML file as Kubernetes does (YAML 1.1: `0440` is octal, `yes` a boolean). */
export function parseYamlDocuments(text: string, where: string): any[] {
  return parseAllDocuments(text, { version: '1.1' }).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${where}: ${document.errors.map((error) => error.message).join('; ')}`);
    const value = document.toJS() as unknown;
    return value === null || value === undefined ? [] : [value];
  });
}

/** The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ''). */
function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
}

/** The identity kustomize keys resources by: group, kind, namespace and name. */
function idOf(object: KubeObject): string {
  return `${groupOf(object.apiVersion)}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
}

/** The kustomization file of a directory, or undefined when it has none. */
function kustomizationFileIn(directory: string): string | undefined {
  return kustomizationFileNames.map((name) => join(directory, name)).find((path) => existsSync(path));
}

/** Reads the objects of one `resources` entry: a manifest file, or a directory rendered as a kustomization. */
function loadResource(entry: string, from: string): KubeObject[] {
  const path = resolve(from, entry);
  if (!existsSync(path)) throw new Error(`${from}: resource ${entry} does not exist`);
  if (statSync(path).isDirectory()) return renderKustomization(path);
  return parseYamlDocuments(readFileSync(path, 'utf8'), path).map((object) => {
    if (typeof object?.kind !== 'string' || typeof object?.apiVersion !== 'string' || typeof object?.metadata?.name !== 'string') {
      throw new Error(`${path}: every document needs apiVersion, kind and metadata.name`);
    }
    return object as KubeObject;
  });
}

/** Whether a strategic merge patch value asks for its element or object to be deleted. */
const isDeleteDirective = (value: unknown): boolean => typeof value === 'object' && value !== null && (value as Record<string, unknown>).$patch === 'delete';

/** Merges a strategic merge patch into a value (maps recursively, `null` deletes, lists as `mergeKeys` says). */
export function strategicMerge(base: unknown, patch: unknown, field = ''): unknown {
  if (Array.isArray(patch)) {
    const key = mergeKeys[field] ?? (field === 'ports' ? portsMergeKey(patch) : undefined);
    if (key === undefined || !Array.isArray(base)) return structuredClone(patch.filter((item) => !isDeleteDirective(item)));
    const merged = structuredClone(base) as Record<string, unknown>[];
    for (const item of patch as Record<string, unknown>[]) {
      if (item?.[key] === undefined) throw new Error(`strategic merge: an element of ${field} has no ${key}`);
      const index = merged.findIndex((existing) => existing[key] === item[key]);
      if (isDeleteDirective(item)) {
        if (index >= 0) merged.splice(index, 1);
      } else if (index >= 0) merged[index] = strategicMerge(merged[index], item, field) as Record<string, unknown>;
      else merged.push(structuredClone(item));
    }
    return merged;
  }
  if (patch === null || typeof patch !== 'object') return patch;
  const patchMap = patch as Record<string, unknown>;
  if (patchMap.$patch !== undefined && patchMap.$patch !== 'delete') throw new Error(`strategic merge: $patch: ${String(patchMap.$patch)} is not supported by this renderer`);
  const result: Record<string, unknown> = base !== null && typeof base === 'object' && !Array.isArray(base) ? structuredClone(base as Record<string, unknown>) : {};
  for (const [name, value] of Object.entries(patchMap)) {
    if (name === '$patch') continue;
    if (name.startsWith('$')) throw new Error(`strategic merge: directive ${name} is not supported by this renderer`);
    if (value === null) delete result[name];
    else result[name] = strategicMerge(result[name], value, name);
  }
  return result;
}

/** Container ports merge on containerPort, Service ports on port. */
function portsMergeKey(patch: unknown[]): string {
  return patch.some((item) => typeof item === 'object' && item !== null && 'containerPort' in item) ? 'containerPort' : 'port';
}

/** One JSON 6902 operation. */
interface JsonPatchOperation { op: 'add' | 'remove' | 'replace'; path: string; value?: unknown }

/** Applies JSON 6902 operations (add, remove, replace; RFC 6901 pointers with ~0, ~1 and `-`). */
export function applyJsonPatch(target: unknown, operations: JsonPatchOperation[]): unknown {
  const document = structuredClone(target);
  for (const operation of operations) {
    if (!['add', 'remove', 'replace'].includes(operation.op)) throw new Error(`JSON patch: op ${operation.op} is not supported by this renderer`);
    const tokens = operation.path.split('/').slice(1).map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
    if (tokens.length === 0) throw new Error('JSON patch: the root cannot be patched');
    let parent: any = document;
    for (const token of tokens.slice(0, -1)) {
      parent = Array.isArray(parent) ? parent[Number(token)] : parent?.[token];
      if (parent === undefined || parent === null || typeof parent !== 'object') throw new Error(`JSON patch: ${operation.path} does not exist`);
    }
    const last = tokens[tokens.length - 1]!;
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(index) || index < 0 || index > parent.length || (operation.op !== 'add' && index >= parent.length)) throw new Error(`JSON patch: ${operation.path} is out of range`);
      if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
      else if (operation.op === 'remove') parent.splice(index, 1);
      else parent[index] = structuredClone(operation.value);
    } else {
      if (operation.op !== 'add' && !Object.hasOwn(parent, last)) throw new Error(`JSON patch: ${operation.path} does not exist`);
      if (operation.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(operation.value);
    }
  }
  return document;
}

/** Whether an object is selected by a patch target. */
function targetSelects(target: PatchTarget, object: KubeObject): boolean {
  if (target.kind !== undefined && target.kind !== object.kind) return false;
  if (target.name !== undefined && !new RegExp(`^(?:${target.name})$`).test(object.metadata.name)) return false;
  if (target.namespace !== undefined && target.namespace !== (object.metadata.namespace ?? '')) return false;
  if (target.group !== undefined && target.group !== groupOf(object.apiVersion)) return false;
  if (target.version !== undefined && target.version !== object.apiVersion.slice(object.apiVersion.indexOf('/') + 1)) return false;
  return true;
}

/** Applies one `patches` entry to the objects; a patch that selects nothing throws (a typo must not pass silently). */
function applyPatch(objects: KubeObject[], entry: { path?: string; patch?: string; target?: PatchTarget }, directory: string): KubeObject[] {
  const where = entry.path === undefined ? `${directory}: inline patch` : join(directory, entry.path);
  const text = entry.path === undefined ? entry.patch : readFileSync(join(directory, entry.path), 'utf8');
  if (text === undefined) throw new Error(`${where}: a patch needs path or patch`);
  const documents = parseYamlDocuments(text, where);
  if (documents.length !== 1) throw new Error(`${where}: one patch per entry`);
  const [patch] = documents;
  if (Array.isArray(patch)) {
    if (entry.target === undefined) throw new Error(`${where}: a JSON 6902 patch needs a target`);
    let matched = 0;
    const result = objects.map((object) => {
      if (!targetSelects(entry.target!, object)) return object;
      matched++;
      return applyJsonPatch(object, patch as JsonPatchOperation[]) as KubeObject;
    });
    if (matched === 0) throw new Error(`${where}: the target selects no resource`);
    return result;
  }
  const patchObject = patch as KubeObject;
  const target: PatchTarget = entry.target ?? { kind: patchObject.kind, name: patchObject.metadata?.name, ...(patchObject.metadata?.namespace ? { namespace: patchObject.metadata.namespace } : {}) };
  let matched = 0;
  const result = objects.flatMap((object) => {
    if (!targetSelects(target, object)) return [object];
    matched++;
    if (patchObject.$patch === 'delete') return [];
    // With a target, the patch's own name and kind (often placeholders) do not rename the object.
    const { apiVersion: _apiVersion, kind: _kind, metadata, ...body } = patchObject;
    const { name: _name, namespace: _namespace, ...metadataPatch } = metadata ?? {};
    return [strategicMerge(object, { ...body, ...(Object.keys(metadataPatch).length > 0 ? { metadata: metadataPatch } : {}) }) as KubeObject];
  });
  if (matched === 0) throw new Error(`${where}: the patch selects no resource`);
  return result;
}

/** Splits an image reference into name, tag and digest (`registry:5000/app:1.2@sha256:…`). */
function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [withoutDigest, digest] = image.split('@') as [string, string | undefined];
  const lastColon = withoutDigest.lastIndexOf(':');
  const hasTag = lastColon > withoutDigest.lastIndexOf('/');
  return { name: hasTag ? withoutDigest.slice(0, lastColon) : withoutDigest, ...(hasTag ? { tag: withoutDigest.slice(lastColon + 1) } : {}), ...(digest ? { digest } : {}) };
}

/** The `images` transformer: rewrites the containers (and init containers) of every pod template whose image name matches. */
function setImages(objects: KubeObject[], images: { name: string; newName?: string; newTag?: string; digest?: string }[]): void {
  const podSpecs = (object: KubeObject): any[] => [object.spec?.template?.spec, object.spec?.jobTemplate?.spec?.template?.spec, object.kind === 'Pod' ? object.spec : undefined].filter(Boolean);
  for (const object of objects) {
    for (const podSpec of podSpecs(object)) {
      for (const container of [...(podSpec.initContainers ?? []), ...(podSpec.containers ?? [])]) {
        const current = splitImage(container.image);
        const rule = images.find((candidate) => candidate.name === current.name);
        if (rule === undefined) continue;
        const name = rule.newName ?? current.name;
        if (rule.digest !== undefined) container.image = `${name}@${rule.digest}`;
        else if (rule.newTag !== undefined) container.image = `${name}:${rule.newTag}`;
        else container.image = `${name}${current.tag ? `:${current.tag}` : ''}${current.digest ? `@${current.digest}` : ''}`;
      }
    }
  }
}

/**
 * Renders the kustomization in `directory` (as `kustomize build` / `kubectl kustomize` would, for
 * the supported fields) into the list of objects it applies.
 */
export function renderKustomization(directory: string): KubeObject[] {
  const file = kustomizationFileIn(directory);
  if (file === undefined) throw new Error(`${directory}: no kustomization.yaml`);
  const [kustomization] = parseYamlDocuments(readFileSync(file, 'utf8'), file) as [Record<string, any>];
  for (const field of Object.keys(kustomization)) if (!supportedFields.has(field)) throw new Error(`${file}: field ${field} is not supported by this renderer (tests/deploy/kustomize.ts)`);
  const base = dirname(file);

  let objects: KubeObject[] = [];
  const seen = new Set<string>();
  for (const entry of (kustomization.resources ?? []) as string[]) {
    for (const object of loadResource(entry, base)) {
      const id = idOf(object);
      if (seen.has(id)) throw new Error(`${file}: ${id} is defined twice`);
      seen.add(id);
      objects.push(object);
    }
  }
  for (const entry of (kustomization.patches ?? []) as { path?: string; patch?: string; target?: PatchTarget }[]) objects = applyPatch(objects, entry, base);
  if (kustomization.namespace !== undefined) {
    for (const object of objects) if (!clusterScopedKinds.has(object.kind)) object.metadata.namespace = kustomization.namespace;
  }
  if (kustomization.nameSuffix !== undefined) {
    for (const object of objects) {
      if (unsuffixedKinds.has(object.kind)) continue;
      if (referencedKinds.has(object.kind)) throw new Error(`${file}: nameSuffix on ${object.kind} ${object.metadata.name} would need name references rewritten, which this renderer does not do`);
      object.metadata.name = `${object.metadata.name}${kustomization.nameSuffix}`;
    }
  }
  for (const { name, count } of (kustomization.replicas ?? []) as { name: string; count: number }[]) {
    const targets = objects.filter((object) => scalableKinds.has(object.kind) && object.metadata.name === name);
    if (targets.length === 0) throw new Error(`${file}: replicas for ${name}, which is not a Deployment or StatefulSet here`);
    for (const target of targets) target.spec.replicas = count;
  }
  if (kustomization.images !== undefined) setImages(objects, kustomization.images);
  return objects;
}
