import { configV1 } from '@gateway/contracts';
import type { ConfigSnapshot } from '../domain/config-snapshot.ts';

const organisationStatus = {
  active: configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE,
  suspended: configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED,
} as const;

const billingMode = {
  commercial: configV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: configV1.BillingMode.BILLING_MODE_INTERNAL,
} as const;

/** A full ConfigUpdate holding the whole snapshot (with decrypted credentials: never log it). */
export function fullConfigUpdate(snapshot: ConfigSnapshot, producedAtMs: number): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({
    version: snapshot.version,
    full: true,
    organisations: snapshot.organisations.map((organisation) => ({
      id: organisation.id,
      status: organisationStatus[organisation.status],
      billingMode: billingMode[organisation.billingMode],
      rpmLimit: organisation.rpmLimit,
      allowedGatewayModelSlugs: organisation.allowedGatewayModels,
    })),
    projects: snapshot.projects.map((project) => ({ id: project.id, organisationId: project.organisationId, disabled: project.disabled })),
    apiKeys: snapshot.apiKeys.map((key) => ({ keyHash: key.keyHash, keyId: key.keyId, projectId: key.projectId })),
    gatewayModels: snapshot.gatewayModels.map((model) => ({
      slug: model.slug,
      displayName: model.displayName,
      defaultMaxTokens: model.defaultMaxTokens,
      maxContextTokens: model.maxContextTokens,
      inputPriceMicrosPerMtok: model.inputPriceMicrosPerMtok,
      outputPriceMicrosPerMtok: model.outputPriceMicrosPerMtok,
      providerInputCostMicrosPerMtok: model.providerInputCostMicrosPerMtok,
      providerOutputCostMicrosPerMtok: model.providerOutputCostMicrosPerMtok,
      upstream: {
        providerKind: model.upstream.providerKind,
        baseUrl: model.upstream.baseUrl,
        model: model.upstream.model,
        apiKey: model.upstreamApiKey,
      },
      createdAtS: BigInt(Math.floor(model.createdAt.getTime() / 1000)),
    })),
    producedAtMs: BigInt(producedAtMs),
  });
}

/** A heartbeat: the version the proxy already holds, no changes, the admin's clock. */
export function heartbeatConfigUpdate(version: bigint, producedAtMs: number): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({ version, full: false, producedAtMs: BigInt(producedAtMs) });
}
