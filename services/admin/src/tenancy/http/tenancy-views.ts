import type { Organisation, Project, ProjectSpend } from '../../common/domain/admin-records.ts';
import type { AdminTokenInfo } from '../domain/admin-tokens.ts';

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
