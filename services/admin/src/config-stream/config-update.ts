import { configV1 } from '@gateway/contracts';
import type {
  ConfigDelta, ConfigSnapshot, SnapshotApiKey, SnapshotDeployment, SnapshotGatewayModel, SnapshotOrganisation, SnapshotProject, SnapshotRetiredApiKey,
} from '../catalog/domain/config-snapshot.ts';

const organisationStatus = {
  active: configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE,
  suspended: configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED,
} as const;

const billingMode = {
  commercial: configV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: configV1.BillingMode.BILLING_MODE_INTERNAL,
} as const;

/**
 * The largest ConfigUpdate the admin sends, bytes (estimated). grpc-js clients refuse messages
 * above 4 MiB unless told otherwise, so a larger snapshot or delta is split into several
 * updates of the same version (see splitConfigUpdate).
 */
export const maxConfigUpdateBytes = 3 * 1024 * 1024;

function organisationMessage(organisation: SnapshotOrganisation): configV1.Organisation {
  return {
    id: organisation.id,
    status: organisationStatus[organisation.status],
    billingMode: billingMode[organisation.billingMode],
    rpmLimit: organisation.rpmLimit,
    allowedGatewayModelSlugs: organisation.allowedGatewayModels,
    modelAliases: organisation.modelAliases,
    ...(organisation.responseRetentionS === null ? {} : { responseRetentionS: BigInt(organisation.responseRetentionS) }),
    responseStoreDisabled: !organisation.storeResponses,
  };
}

function projectMessage(project: SnapshotProject): configV1.Project {
  return { id: project.id, organisationId: project.organisationId, disabled: project.disabled };
}

function apiKeyMessage(key: SnapshotApiKey): configV1.ApiKey {
  return { keyHash: key.keyHash, keyId: key.keyId, projectId: key.projectId };
}

function retiredApiKeyMessage(key: SnapshotRetiredApiKey): configV1.RetiredApiKey {
  return { keyHash: key.keyHash, projectId: key.projectId, retiredAtMs: BigInt(key.retiredAtMs) };
}

function deploymentMessage(deployment: SnapshotDeployment): configV1.UpstreamDeployment {
  return {
    name: deployment.name,
    upstream: deployment.upstream,
    allowPrivateNetwork: deployment.allowPrivateNetwork,
    priority: deployment.priority,
    weight: deployment.weight,
    providerInputCostMicrosPerMtok: deployment.providerInputCostMicrosPerMtok,
    providerOutputCostMicrosPerMtok: deployment.providerOutputCostMicrosPerMtok,
    providerCachedInputCostMicrosPerMtok: deployment.providerCachedInputCostMicrosPerMtok,
    providerCacheWrite5mCostMicrosPerMtok: deployment.providerCacheWrite5mCostMicrosPerMtok,
    providerCacheWrite1hCostMicrosPerMtok: deployment.providerCacheWrite1hCostMicrosPerMtok,
    // null (as output) travels as absent, as the model's own.
    providerReasoningCostMicrosPerMtok: deployment.providerReasoningCostMicrosPerMtok ?? undefined,
    providerAudioInputCostMicrosPerMtok: deployment.providerAudioInputCostMicrosPerMtok,
    providerImageInputCostMicrosPerMtok: deployment.providerImageInputCostMicrosPerMtok,
  };
}

function gatewayModelMessage(model: SnapshotGatewayModel): configV1.GatewayModel {
  return {
    slug: model.slug,
    displayName: model.displayName,
    defaultMaxTokens: model.defaultMaxTokens,
    maxContextTokens: model.maxContextTokens,
    inputPriceMicrosPerMtok: model.inputPriceMicrosPerMtok,
    outputPriceMicrosPerMtok: model.outputPriceMicrosPerMtok,
    providerInputCostMicrosPerMtok: model.providerInputCostMicrosPerMtok,
    providerOutputCostMicrosPerMtok: model.providerOutputCostMicrosPerMtok,
    cachedInputPriceMicrosPerMtok: model.cachedInputPriceMicrosPerMtok,
    cacheWrite5mPriceMicrosPerMtok: model.cacheWrite5mPriceMicrosPerMtok,
    cacheWrite1hPriceMicrosPerMtok: model.cacheWrite1hPriceMicrosPerMtok,
    // null (as output) travels as absent: the proxy prices reasoning at the output price.
    reasoningPriceMicrosPerMtok: model.reasoningPriceMicrosPerMtok ?? undefined,
    audioInputPriceMicrosPerMtok: model.audioInputPriceMicrosPerMtok,
    imageInputPriceMicrosPerMtok: model.imageInputPriceMicrosPerMtok,
    providerCachedInputCostMicrosPerMtok: model.providerCachedInputCostMicrosPerMtok,
    providerCacheWrite5mCostMicrosPerMtok: model.providerCacheWrite5mCostMicrosPerMtok,
    providerCacheWrite1hCostMicrosPerMtok: model.providerCacheWrite1hCostMicrosPerMtok,
    providerReasoningCostMicrosPerMtok: model.providerReasoningCostMicrosPerMtok ?? undefined,
    providerAudioInputCostMicrosPerMtok: model.providerAudioInputCostMicrosPerMtok,
    providerImageInputCostMicrosPerMtok: model.providerImageInputCostMicrosPerMtok,
    upstream: {
      providerKind: model.upstream.providerKind,
      baseUrl: model.upstream.baseUrl,
      model: model.upstream.model,
      apiKey: model.upstreamApiKey,
    },
    createdAtS: BigInt(Math.floor(model.createdAt.getTime() / 1000)),
    // The complete list, the model's own upstream first as "primary" (config-snapshot.ts openModel).
    deployments: model.deployments.map(deploymentMessage),
    allowPrivateNetwork: model.allowPrivateNetwork,
    kind: model.kind,
    // "text" is implied on the wire: what else the upstream accepts.
    inputModalities: model.inputModalities.filter((modality) => modality !== 'text'),
    reasoningEfforts: model.reasoningEfforts,
    thinkingModes: model.thinkingModes,
    maxThinkingBudgetTokens: model.maxThinkingBudgetTokens,
    returnsReasoning: model.returnsReasoning,
  };
}

/** What the proxies' response stores need of the admin: the key they seal under and the platform's retention. */
export interface ResponseStoreSettings {
  /** deriveResponseStoreKey's key. Never logged. */
  key: Buffer;
  /** ADMIN_RESPONSE_RETENTION_S, seconds. */
  retentionS: number;
}

/**
 * A full ConfigUpdate holding the whole snapshot, the key proxies seal tool-call ids with and,
 * when given, the key they keep prompt caches per organisation with and the stored-Responses key
 * and retention (decrypted credentials and keys: never log it).
 */
export function fullConfigUpdate(
  snapshot: ConfigSnapshot, producedAtMs: number, toolCallIdKey: Buffer,
  keys: { cacheScopeKey?: Buffer | undefined; responseStore?: ResponseStoreSettings | undefined } = {},
): configV1.ConfigUpdate {
  const { cacheScopeKey, responseStore } = keys;
  return configV1.ConfigUpdate.fromPartial({
    version: snapshot.version,
    full: true,
    toolCallIdKey,
    ...(cacheScopeKey === undefined ? {} : { cacheScopeKey }),
    ...(responseStore === undefined ? {} : { responseStoreKey: responseStore.key, responseRetentionS: BigInt(responseStore.retentionS) }),
    organisations: snapshot.organisations.map(organisationMessage),
    projects: snapshot.projects.map(projectMessage),
    apiKeys: snapshot.apiKeys.map(apiKeyMessage),
    retiredApiKeys: snapshot.retiredApiKeys.map(retiredApiKeyMessage),
    gatewayModels: snapshot.gatewayModels.map(gatewayModelMessage),
    platformModelAliases: snapshot.platformModelAliases,
    producedAtMs: BigInt(producedAtMs),
  });
}

/** A delta ConfigUpdate: upserts of what changed since the proxy's version, and removals. */
export function deltaConfigUpdate(delta: ConfigDelta, producedAtMs: number): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({
    version: delta.version,
    full: false,
    organisations: delta.organisations.map(organisationMessage),
    projects: delta.projects.map(projectMessage),
    apiKeys: delta.apiKeys.map(apiKeyMessage),
    gatewayModels: delta.gatewayModels.map(gatewayModelMessage),
    removedOrganisationIds: delta.removedOrganisationIds,
    removedProjectIds: delta.removedProjectIds,
    removedKeyHashes: delta.removedKeyHashes,
    retiredApiKeys: delta.retiredApiKeys.map(retiredApiKeyMessage),
    removedGatewayModelSlugs: delta.removedGatewayModelSlugs,
    platformModelAliases: delta.platformModelAliases,
    removedPlatformModelAliases: delta.removedPlatformModelAliases,
    producedAtMs: BigInt(producedAtMs),
  });
}

/** A heartbeat: the version the proxy already holds, no changes, the admin's clock. */
export function heartbeatConfigUpdate(version: bigint, producedAtMs: number): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({ version, full: false, producedAtMs: BigInt(producedAtMs) });
}

/** Upper estimate of one entry's encoded size, bytes: its strings plus tag and length overhead. */
const stringBytes = (value: string) => Buffer.byteLength(value) + 3;
const entrySizes = {
  organisation: (o: configV1.Organisation) => stringBytes(o.id) + o.allowedGatewayModelSlugs.reduce((sum, slug) => sum + stringBytes(slug), 0) + 24
    + Object.entries(o.modelAliases).reduce((sum, [name, slug]) => sum + stringBytes(name) + stringBytes(slug) + 3, 0),
  project: (p: configV1.Project) => stringBytes(p.id) + stringBytes(p.organisationId) + 8,
  retiredApiKey: (k: configV1.RetiredApiKey) => stringBytes(k.keyHash) + stringBytes(k.projectId) + 14,
  apiKey: (k: configV1.ApiKey) => stringBytes(k.keyHash) + stringBytes(k.keyId) + stringBytes(k.projectId) + 6,
  gatewayModel: (m: configV1.GatewayModel) => stringBytes(m.slug) + stringBytes(m.displayName) + 128
    + (m.upstream ? stringBytes(m.upstream.providerKind) + stringBytes(m.upstream.baseUrl) + stringBytes(m.upstream.model) + stringBytes(m.upstream.apiKey) : 0)
    + m.deployments.reduce((sum, d) => sum + stringBytes(d.name) + 128
      + (d.upstream ? stringBytes(d.upstream.providerKind) + stringBytes(d.upstream.baseUrl) + stringBytes(d.upstream.model) + stringBytes(d.upstream.apiKey) : 0), 0),
};

/**
 * Splits an update whose estimated size passes `maxBytes` into several updates of the same
 * version: the first keeps `full` (a full snapshot's first part replaces what the proxy
 * holds) and the tool-call id and cache scope keys (a proxy keeps them through deltas), the rest are deltas that add to it. Removals, organisations and models come first,
 * keys last, so until the last part is applied a proxy is missing keys (it refuses them)
 * rather than holding anything it should no longer honour. Only the last part's
 * acknowledgement means the version is applied. An update that fits is returned as is.
 */
export function splitConfigUpdate(update: configV1.ConfigUpdate, maxBytes = maxConfigUpdateBytes): configV1.ConfigUpdate[] {
  const parts: configV1.ConfigUpdate[] = [];
  // The platform aliases ride in the first part: a few hundred names at most, and a full
  // snapshot's first part must carry all of them (an alias absent from a full update is gone).
  let current = configV1.ConfigUpdate.fromPartial({
    version: update.version, full: update.full, producedAtMs: update.producedAtMs, toolCallIdKey: update.toolCallIdKey,
    platformModelAliases: update.platformModelAliases, removedPlatformModelAliases: update.removedPlatformModelAliases,
    cacheScopeKey: update.cacheScopeKey, responseStoreKey: update.responseStoreKey, responseRetentionS: update.responseRetentionS,
  });
  // A part's fixed bytes: its header, and the first part's keys, retention and platform aliases; a
  // part always takes one entry past them, so the keys alone never make a part of their own.
  let emptyBytes = 32 + (update.toolCallIdKey?.length ?? 0) + (update.cacheScopeKey?.length ?? 0) + (update.responseStoreKey?.length ?? 0) + 16
    + Object.entries(update.platformModelAliases).reduce((sum, [name, slug]) => sum + stringBytes(name) + stringBytes(slug) + 3, 0)
    + update.removedPlatformModelAliases.reduce((sum, name) => sum + stringBytes(name), 0);
  let currentBytes = emptyBytes;
  const add = <Entry>(field: 'organisations' | 'projects' | 'apiKeys' | 'gatewayModels' | 'removedOrganisationIds' | 'removedProjectIds' | 'removedKeyHashes' | 'removedGatewayModelSlugs' | 'retiredApiKeys', entry: Entry, bytes: number) => {
    if (currentBytes + bytes > maxBytes && currentBytes > emptyBytes) {
      parts.push(current);
      current = configV1.ConfigUpdate.fromPartial({ version: update.version, full: false, producedAtMs: update.producedAtMs });
      emptyBytes = 32;
      currentBytes = emptyBytes;
    }
    (current[field] as Entry[]).push(entry);
    currentBytes += bytes;
  };
  for (const id of update.removedOrganisationIds) add('removedOrganisationIds', id, stringBytes(id));
  for (const id of update.removedProjectIds) add('removedProjectIds', id, stringBytes(id));
  for (const hash of update.removedKeyHashes) add('removedKeyHashes', hash, stringBytes(hash));
  for (const slug of update.removedGatewayModelSlugs) add('removedGatewayModelSlugs', slug, stringBytes(slug));
  for (const organisation of update.organisations) add('organisations', organisation, entrySizes.organisation(organisation));
  for (const model of update.gatewayModels) add('gatewayModels', model, entrySizes.gatewayModel(model));
  for (const project of update.projects) add('projects', project, entrySizes.project(project));
  // Retired keys ride after the removals that name them (they never authenticate; a full update's parts after the first add to what the first replaced).
  for (const key of update.retiredApiKeys) add('retiredApiKeys', key, entrySizes.retiredApiKey(key));
  for (const key of update.apiKeys) add('apiKeys', key, entrySizes.apiKey(key));
  parts.push(current);
  return parts;
}
