import type { UsageRecord, UsageSummaryRow, UsageTokenClass } from '../../common/domain/admin-records.ts';
import type { AuditEvent } from '../../common/domain/audit-log.ts';

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
