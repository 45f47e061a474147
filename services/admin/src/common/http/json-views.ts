import type { Balance, Organisation, Page, Project, ProjectSpend, UsageRecord, UsageSummaryRow, UsageTokenClass } from '../domain/admin-records.ts';
import type { CreditOutcome } from '../../billing/domain/balance-service.ts';
import { gatewayModelToJson } from '../../catalog/domain/gateway-model-schema.ts';
import type { AdminTokenInfo } from '../../tenancy/domain/admin-tokens.ts';
import type { AuditEvent } from '../domain/audit-log.ts';

/** The JSON of an organisation (snake_case, ISO timestamps). */
export function organisationJson(organisation: Organisation) {
  return {
    id: organisation.id,
    name: organisation.name,
    status: organisation.status,
    billing_mode: organisation.billingMode,
    rpm_limit: organisation.rpmLimit,
    allowed_gateway_models: organisation.allowedGatewayModels,
    store_responses: organisation.storeResponses,
    response_retention_s: organisation.responseRetentionS,
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

/** The JSON of a gateway model: money as decimal strings, and no credential in any form (see gatewayModelToJson). */
export const gatewayModelJson = gatewayModelToJson;

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
    overrun_output_tokens: Number(record.overrunOutputTokens),
    // Only when the Settle itemised classes: a plain record's JSON stays as it was.
    ...(record.tokenClasses.length === 0 ? {} : {
      cost_by_class: Object.fromEntries(record.tokenClasses.map((entry) => [entry.tokenClass, {
        tokens: Number(entry.tokens), cost_micros: entry.costMicros.toString(), provider_cost_micros: entry.providerCostMicros.toString(),
      }])),
    }),
  };
}

/** The JSON of one page of a cursor-paged list. */
export function listJson<Item, Json>(page: Page<Item>, view: (item: Item) => Json) {
  return { object: 'list' as const, data: page.items.map(view), has_more: page.hasMore };
}

/** The JSON of an admin-API token (never its secret or hash). */
export function adminTokenJson(token: AdminTokenInfo) {
  return {
    id: token.id,
    name: token.name,
    organisation_id: token.organisationId,
    hint: token.hint,
    origin: token.origin,
    created_at: token.createdAt.toISOString(),
    revoked_at: token.revokedAt === null ? null : token.revokedAt.toISOString(),
  };
}

/** The JSON of a project's budget and spend this month; money as decimal strings. */
export function projectBudgetJson(spend: ProjectSpend) {
  return {
    project_id: spend.projectId,
    month: spend.month,
    monthly_cap_micros: spend.budget === null ? null : spend.budget.monthlyCapMicros.toString(),
    soft_alert_percent: spend.budget === null ? null : spend.budget.softAlertPercent,
    settled_micros: spend.settledMicros.toString(),
    held_micros: spend.heldMicros.toString(),
    spent_micros: (spend.settledMicros + spend.heldMicros).toString(),
    soft_alert_raised: spend.softAlertRaised,
  };
}

/** The JSON of one usage summary row. */
export function usageSummaryRowJson(row: UsageSummaryRow) {
  return {
    day: row.day,
    model: row.modelSlug,
    // Only a summary grouped by project carries the project.
    ...(row.projectId === '' ? {} : { project_id: row.projectId }),
    requests: Number(row.requests),
    input_tokens: Number(row.inputTokens),
    output_tokens: Number(row.outputTokens),
    cost_micros: row.costMicros.toString(),
    provider_cost_micros: row.providerCostMicros.toString(),
    debited_micros: row.debitedMicros.toString(),
    token_classes: row.tokenClasses.map(tokenClassJson),
    unclassified_requests: Number(row.unclassifiedRequests),
  };
}

/** The JSON of one token price class of a summary: tokens as a number, money as decimal strings (µ₹). */
function tokenClassJson(entry: UsageTokenClass) {
  return {
    class: entry.tokenClass,
    tokens: Number(entry.tokens),
    cost_micros: entry.costMicros.toString(),
    provider_cost_micros: entry.providerCostMicros.toString(),
  };
}

/** The JSON of an audit event. */
export function auditEventJson(event: AuditEvent) {
  return {
    id: event.id.toString(),
    occurred_at: event.occurredAt.toISOString(),
    actor: { kind: event.actorKind, token_id: event.actorTokenId, person_id: event.actorPersonId },
    organisation_id: event.organisationId,
    action: event.action,
    resource_type: event.resourceType,
    resource_id: event.resourceId,
    changes: event.changes,
  };
}
