import type { Balance, GatewayModel, Organisation, Page, Project, UsageRecord } from '../domain/admin-records.ts';
import type { CreditOutcome } from '../domain/admin-service.ts';

/** The JSON of an organisation (snake_case, ISO timestamps). */
export function organisationJson(organisation: Organisation) {
  return {
    id: organisation.id,
    name: organisation.name,
    status: organisation.status,
    billing_mode: organisation.billingMode,
    rpm_limit: organisation.rpmLimit,
    allowed_gateway_models: organisation.allowedGatewayModels,
    created_at: organisation.createdAt.toISOString(),
  };
}

/** The JSON of a project; the key appears as id, hint and creation time only. */
export function projectJson(project: Project) {
  return {
    id: project.id,
    organisation_id: project.organisationId,
    name: project.name,
    status: project.status,
    api_key: project.apiKey === null
      ? null
      : { id: project.apiKey.id, hint: project.apiKey.hint, created_at: project.apiKey.createdAt.toISOString() },
    created_at: project.createdAt.toISOString(),
  };
}

/** The JSON of a gateway model: money as decimal strings, and no credential in any form. */
export function gatewayModelJson(model: GatewayModel) {
  return {
    slug: model.slug,
    display_name: model.displayName,
    default_max_tokens: model.defaultMaxTokens,
    max_context_tokens: model.maxContextTokens,
    input_price_micros_per_mtok: model.inputPriceMicrosPerMtok.toString(),
    output_price_micros_per_mtok: model.outputPriceMicrosPerMtok.toString(),
    provider_input_cost_micros_per_mtok: model.providerInputCostMicrosPerMtok.toString(),
    provider_output_cost_micros_per_mtok: model.providerOutputCostMicrosPerMtok.toString(),
    upstream: {
      provider_kind: model.upstream.providerKind,
      base_url: model.upstream.baseUrl,
      model: model.upstream.model,
      has_api_key: model.upstream.hasApiKey,
    },
    created_at: model.createdAt.toISOString(),
  };
}

/** The JSON of a balance, in INR micro-rupees as decimal strings. */
export function balanceJson(balance: Balance) {
  return {
    organisation_id: balance.organisationId,
    currency: 'INR' as const,
    credited_micros: balance.creditedMicros.toString(),
    available_micros: balance.availableMicros.toString(),
    held_micros: balance.heldMicros.toString(),
    debited_micros: balance.debitedMicros.toString(),
  };
}

/** The JSON of a manual credit's result. */
export function creditJson(outcome: CreditOutcome) {
  return {
    credit_id: outcome.creditId,
    organisation_id: outcome.organisationId,
    amount_micros: outcome.amountMicros.toString(),
    reason: outcome.reason,
    balance: balanceJson(outcome.balance),
  };
}

/** The JSON of a usage record; token counts as numbers, money as decimal strings. */
export function usageRecordJson(record: UsageRecord) {
  return {
    id: record.id,
    project_id: record.projectId,
    model: record.modelSlug,
    input_tokens: Number(record.inputTokens),
    output_tokens: Number(record.outputTokens),
    cost_micros: record.costMicros.toString(),
    provider_cost_micros: record.providerCostMicros.toString(),
    debited_micros: record.debitedMicros.toString(),
    usage_source: record.usageSource,
    request_id: record.requestId,
    created_at: record.createdAt.toISOString(),
  };
}

/** The JSON of one page of a cursor-paged list. */
export function listJson<Item, Json>(page: Page<Item>, view: (item: Item) => Json) {
  return { object: 'list' as const, data: page.items.map(view), has_more: page.hasMore };
}
