import { z } from 'zod';
import { gatewayModelShown } from '../../catalog/domain/gateway-model-schema.ts';
import { moneyShown as money, timestampShown as timestamp } from '../domain/wire-fields.ts';

/**
 * The shapes of the admin API's responses. They document the API (OpenAPI) and tests parse
 * real responses with them, so the document cannot drift from what the service sends.
 */

const id = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

/** An organisation. */
export const organisationResponse = z.strictObject({
  id: id('org', 'organisation'),
  name: z.string(),
  status: z.enum(['active', 'suspended']),
  billing_mode: z.enum(['commercial', 'internal']),
  rpm_limit: z.int(),
  allowed_gateway_models: z.array(z.string()).meta({ description: 'Slugs, sorted.' }),
  store_responses: z.boolean().meta({ description: 'false: the organisation\'s Responses are never stored (`store: true` is a 400 naming `store`).' }),
  response_retention_s: z.int().nullable().meta({ description: 'The organisation\'s own retention of stored Responses, seconds; null: the platform\'s.' }),
  created_at: timestamp,
});

/** What may be shown about a project's API key (never the secret). */
const apiKeyInfoResponse = z.strictObject({
  id: id('key', 'API key'),
  hint: z.string().meta({ description: 'Prefix and last four characters, e.g. "gwsk_…x7Qa".' }),
  created_at: timestamp,
});

/** A project with its active key's public details. */
export const projectResponse = z.strictObject({
  id: id('proj', 'project'),
  organisation_id: id('org', 'organisation'),
  name: z.string(),
  status: z.enum(['active', 'disabled']),
  api_key: apiKeyInfoResponse.nullable(),
  created_at: timestamp,
});

/** The answer to a project creation: the only time the key's secret is shown. */
export const projectCreatedResponse = z.strictObject({
  project: projectResponse,
  api_key: z.string().regex(/^gwsk_/).meta({ description: 'The API key secret, shown once; only its hash is stored.' }),
});

/** A gateway model; its upstream shows whether a credential is set, never the credential (from the one Gateway Model schema). */
export const gatewayModelResponse = gatewayModelShown;

/** An organisation's balance. credited = available + held + debited. */
export const balanceResponse = z.strictObject({
  organisation_id: id('org', 'organisation'),
  currency: z.literal('INR'),
  credited_micros: money('Everything ever credited.'),
  available_micros: money('What new Reserves can hold.'),
  held_micros: money('Held by open Reserves.'),
  debited_micros: money('Debited by settled usage.'),
});

/** The result of a manual credit. */
export const creditResponse = z.strictObject({
  credit_id: z.string().meta({ description: 'The ledger credit id: "manual:<organisation id>:<Idempotency-Key>".' }),
  organisation_id: id('org', 'organisation'),
  amount_micros: money('The amount credited.'),
  reason: z.string(),
  balance: balanceResponse.meta({ description: 'The balance right after this credit (the same on a replay).' }),
});

/** One usage record. */
const usageRecordResponse = z.strictObject({
  id: z.string(),
  project_id: z.string(),
  model: z.string().meta({ description: 'Gateway model slug.' }),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cost_micros: money('Customer-price cost.'),
  provider_cost_micros: money('What the provider charges (analytics only).'),
  debited_micros: money('Debited from the wallet ("0" in internal billing mode).'),
  usage_source: z.enum(['upstream', 'gateway_estimate']).meta({ description: 'upstream: the provider reported the tokens; gateway_estimate: the gateway counted them.' }),
  request_id: z.string(),
  created_at: timestamp,
  overrun_output_tokens: z.int().meta({ description: 'Output tokens the upstream produced beyond the Reserve: neither delivered nor billed, their provider cost inside provider_cost_micros. Non-zero flags the record; 0: none.' }),
  cost_by_class: z.record(z.string(), z.strictObject({
    tokens: z.int(),
    cost_micros: money('Customer-price cost of the class.'),
    provider_cost_micros: money('What the provider charges for the class (analytics only).'),
  })).optional().meta({
    description: 'The usage by token price class (input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output, reasoning), the classes with tokens only; '
      + 'their cost_micros sum to cost_micros. Absent: a plain usage (input_tokens and output_tokens at the model\'s input and output prices).',
  }),
});

/** An admin-API token: never its secret or hash. */
export const adminTokenResponse = z.strictObject({
  id: id('adm', 'token'),
  name: z.string(),
  organisation_id: id('org', 'organisation').nullable().meta({ description: 'null: a platform-admin token; else the only organisation the token sees.' }),
  hint: z.string().meta({ description: 'Prefix and last four characters, e.g. "gwadm_…x7Qa".' }),
  origin: z.enum(['bootstrap_env', 'bootstrap_issued', 'cli', 'api']),
  created_at: timestamp,
  revoked_at: timestamp.nullable(),
});

/** The answer to issuing a token: the only time its secret is shown. */
export const adminTokenCreatedResponse = z.strictObject({
  token: adminTokenResponse,
  secret: z.string().regex(/^gwadm_/).meta({ description: 'The token secret, shown once; only its hash is stored.' }),
});

/** A project's budget and spend this month (calendar month, Asia/Kolkata), from the ledger. */
export const projectBudgetResponse = z.strictObject({
  project_id: id('proj', 'project'),
  month: z.string().meta({ description: 'The current month in Asia/Kolkata, e.g. "2026-11".' }),
  monthly_cap_micros: money('The monthly cap; null when the project has no budget.').nullable(),
  soft_alert_percent: z.int().nullable().meta({ description: 'Soft alert threshold, percent of the cap; null without a budget.' }),
  settled_micros: money('Cost settled this month.'),
  held_micros: money('Held by open reservations.'),
  spent_micros: money('settled + held: what counts against the cap.'),
  soft_alert_raised: z.boolean().meta({ description: 'Whether this month\'s soft alert has been raised.' }),
});

/** One token price class of a summary: its tokens, customer cost and provider cost. */
const tokenClassSummary = z.strictObject({
  class: z.string().meta({ description: 'The token price class: input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output or reasoning.' }),
  tokens: z.int(),
  cost_micros: money('Customer-price cost of the class.'),
  provider_cost_micros: money('What the providers charge for the class (analytics only).'),
});

/** Usage summed by day (Asia/Kolkata) and gateway model (and project with group_by=project). */
export const usageSummaryResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(z.strictObject({
    day: z.string().meta({ description: 'Calendar day in Asia/Kolkata, e.g. "2026-11-21".' }),
    model: z.string().meta({ description: 'Gateway model slug.' }),
    project_id: z.string().optional().meta({ description: 'The project; only with group_by=project.' }),
    requests: z.int(),
    input_tokens: z.int(),
    output_tokens: z.int(),
    cost_micros: money('Customer-price cost.'),
    provider_cost_micros: money('Provider cost (analytics only).'),
    debited_micros: money('Debited from the wallet.'),
    token_classes: z.array(tokenClassSummary).meta({
      description: 'Tokens and cost per token price class, summed over the row\'s requests that carry classes, ordered by class name; '
        + 'empty when none does. Requests without classes are counted in unclassified_requests instead.',
    }),
    unclassified_requests: z.int().meta({
      description: 'Requests of the row without classes (plain input and output); their cost is cost_micros minus the sum of token_classes[].cost_micros.',
    }),
  })).meta({ description: 'Ordered by day, then model.' }),
});

/** One audit event: who changed what, when, with the before/after of each changed field (never a secret). */
export const auditEventResponse = z.strictObject({
  id: z.string().regex(/^\d+$/).meta({ description: 'Increasing; pass the last one as `after` for the next page.' }),
  occurred_at: timestamp,
  actor: z.strictObject({
    kind: z.enum(['platform_admin', 'organisation_token', 'person', 'cli', 'system']),
    token_id: z.string().nullable().meta({ description: 'The admin token that made the call; null for a person, the command line and the system.' }),
    person_id: z.string().nullable().meta({ description: 'The signed-in person who made the call; null for tokens, the command line and the system.' }),
  }),
  organisation_id: z.string().nullable(),
  action: z.string().meta({ description: 'e.g. "organisation.update", "project.rotate_key".' }),
  resource_type: z.string(),
  resource_id: z.string(),
  changes: z.record(z.string(), z.strictObject({ before: z.unknown(), after: z.unknown() }))
    .meta({ description: 'The before/after of each changed field. Credentials appear only as "(set)" / "(replaced)", keys as id and hint.' }),
});

/** A cursor-paged list of items. */
export function listResponse<Item extends z.ZodType>(item: Item) {
  return z.strictObject({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean().meta({ description: 'Whether more items follow; pass the last id (slug) as `after`.' }),
  });
}

/** A page of usage records, newest first. */
export const usageListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(usageRecordResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** The OpenAI-shaped error body every error carries. */
export const errorResponse = z.strictObject({
  error: z.strictObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string(),
  }),
});

/** The body of /healthz and /readyz. */
export const healthResponse = z.strictObject({ status: z.enum(['ok', 'ready', 'not_ready']) });

/** Response schemas the OpenAPI document names under components/schemas (and references by $ref). */
export const namedResponseSchemas = new Map<z.ZodType, string>([
  [organisationResponse, 'Organisation'],
  [projectResponse, 'Project'],
  [projectCreatedResponse, 'ProjectCreated'],
  [gatewayModelResponse, 'GatewayModel'],
  [balanceResponse, 'Balance'],
  [creditResponse, 'Credit'],
  [usageListResponse, 'UsageList'],
  [errorResponse, 'Error'],
  [healthResponse, 'Health'],
  [adminTokenResponse, 'AdminToken'],
  [adminTokenCreatedResponse, 'AdminTokenCreated'],
  [projectBudgetResponse, 'ProjectBudget'],
  [usageSummaryResponse, 'UsageSummary'],
  [auditEventResponse, 'AuditEvent'],
]);
