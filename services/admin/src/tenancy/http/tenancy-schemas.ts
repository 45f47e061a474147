import { z } from 'zod';
import { gatewayModelSlug } from '../../catalog/http/gateway-model-schema.ts';
import { displayText, integerIn, moneyMicros, moneyShown as money, timestampShown as timestamp } from '../../common/http/wire-fields.ts';
import { prefixedId } from '../../common/http/response-schemas.ts';

/** The tenancy area's wire shapes: organisations, projects and their keys, budgets, admin tokens. */

const billingMode = z.enum(['commercial', 'internal'], { error: 'must be "commercial" or "internal"' })
  .meta({ description: 'commercial: prepaid wallet, debited by usage. internal: sponsored; usage and provider cost recorded, no debit.' });
const organisationStatus = z.enum(['active', 'suspended'], { error: 'must be "active" or "suspended"' })
  .meta({ description: 'A suspended organisation is refused with 403 on inference.' });
const rpmLimit = integerIn(1, 1_000_000, 'Requests per minute shared by all projects and keys of the organisation.');
const allowedGatewayModels = z.array(gatewayModelSlug, { error: 'must be an array of gateway model slugs' })
  .max(1000, { error: 'must list at most 1000 slugs' })
  .meta({ description: 'Slugs of existing gateway models the organisation may use.' });

/** Body of POST /admin/v1/organisations. */
export const createOrganisationBody = z.strictObject({
  name: displayText('Name of the organisation, 1..200 characters.'),
  billing_mode: billingMode.optional(),
  rpm_limit: rpmLimit.optional(),
  allowed_gateway_models: allowedGatewayModels.optional(),
});

/** Body of PATCH /admin/v1/organisations/{id}: at least one field. */
export const updateOrganisationBody = z.strictObject({
  name: displayText('Name of the organisation, 1..200 characters.').optional(),
  status: organisationStatus.optional(),
  billing_mode: billingMode.optional(),
  rpm_limit: rpmLimit.optional(),
  allowed_gateway_models: allowedGatewayModels.optional(),
}).refine((body) => Object.keys(body).length > 0, {
  error: 'must change at least one of name, status, billing_mode, rpm_limit, allowed_gateway_models',
});

/** Body of PUT /admin/v1/organisations/{id}/response-storage: both settings, as they are to be. */
export const responseStorageBody = z.strictObject({
  store_responses: z.boolean({ error: 'must be true or false' })
    .meta({ description: 'false: the organisation\'s Responses are never stored (`store: true` is then a 400 naming `store`).' }),
  response_retention_s: integerIn(1, 31_536_000, 'How long its stored Responses are kept, seconds, at most the platform\'s retention; null: the platform\'s.').nullable(),
});

/** Body of POST /admin/v1/organisations/{id}/projects. */
export const createProjectBody = z.strictObject({
  name: displayText('Name of the project, 1..200 characters.'),
});

/** Body of PATCH /admin/v1/projects/{id}: a new name and/or status (disabled: its key is refused). */
export const updateProjectBody = z.strictObject({
  name: displayText('Name of the project, 1..200 characters.').optional(),
  status: z.enum(['active', 'disabled'], { error: 'must be "active" or "disabled"' })
    .optional()
    .meta({ description: 'disabled: every proxy refuses the project\'s key (401) until it is active again.' }),
}).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one of name, status' });

/** The largest monthly project budget, µ₹ (₹1,000,000,000). */
const maxBudgetMicros = 1_000_000_000_000_000n;

/** Body of PUT /admin/v1/projects/{id}/budget. */
export const projectBudgetBody = z.strictObject({
  monthly_cap_micros: moneyMicros({ min: 1n, max: maxBudgetMicros }, 'Monthly cap on the project\'s cost (calendar month, Asia/Kolkata), positive.'),
  soft_alert_percent: integerIn(1, 100, 'A soft alert is raised once a month when spend reaches this percentage of the cap. Default 80.').optional(),
});

/** Body of the token-issuing routes. */
export const createTokenBody = z.strictObject({
  name: displayText('What the token is for, e.g. "billing automation". 1..200 characters.'),
});

/** An organisation. */
export const organisationResponse = z.strictObject({
  id: prefixedId('org', 'organisation'),
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
  id: prefixedId('key', 'API key'),
  hint: z.string().meta({ description: 'Prefix and last four characters, e.g. "gwsk_…x7Qa".' }),
  created_at: timestamp,
});

/** A project with its active key's public details. */
export const projectResponse = z.strictObject({
  id: prefixedId('proj', 'project'),
  organisation_id: prefixedId('org', 'organisation'),
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

/** An admin-API token: never its secret or hash. */
export const adminTokenResponse = z.strictObject({
  id: prefixedId('adm', 'token'),
  name: z.string(),
  organisation_id: prefixedId('org', 'organisation').nullable().meta({ description: 'null: a platform-admin token; else the only organisation the token sees.' }),
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
  project_id: prefixedId('proj', 'project'),
  month: z.string().meta({ description: 'The current month in Asia/Kolkata, e.g. "2026-11".' }),
  monthly_cap_micros: money('The monthly cap; null when the project has no budget.').nullable(),
  soft_alert_percent: z.int().nullable().meta({ description: 'Soft alert threshold, percent of the cap; null without a budget.' }),
  settled_micros: money('Cost settled this month.'),
  held_micros: money('Held by open reservations.'),
  spent_micros: money('settled + held: what counts against the cap.'),
  soft_alert_raised: z.boolean().meta({ description: 'Whether this month\'s soft alert has been raised.' }),
});
