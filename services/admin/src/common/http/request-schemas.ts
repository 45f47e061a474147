import { z } from 'zod';
import { gatewayModelCreateShape, gatewayModelSlug, gatewayModelUpdateShape } from '../../catalog/domain/gateway-model-schema.ts';
import { embeddingModelProblems, modalityProblem } from '../../catalog/domain/gateway-models-service.ts';
import { reasoningControlsProblem } from '../../catalog/domain/reasoning-controls.ts';
import { apiVersionQueryProviderKind, providerKinds } from '../../catalog/domain/provider-kinds.ts';
import { allowsPrivateUpstream, upstreamUrlProblem, type UpstreamUrlPolicy } from '../../catalog/domain/upstream-url.ts';
import { displayText, integerIn, moneyMicros, pageLimit } from '../domain/wire-fields.ts';

/** The largest single manual credit, µ₹ (₹1,000,000,000): a guard against a slipped finger. */
const maxCreditMicros = 1_000_000_000_000_000n;
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

/** Body of POST /admin/v1/organisations/{id}/credits. */
export const createCreditBody = z.strictObject({
  amount_micros: moneyMicros({ min: 1n, max: maxCreditMicros }, 'Amount to credit, positive.'),
  reason: displayText('Why the credit is made; kept on the ledger movement. 1..500 characters.', 500),
});

/** The Idempotency-Key header of a credit: 1..128 characters of A-Z a-z 0-9 _ - : . */
export const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z.string({ error: (issue) => (issue.input === undefined ? 'header is required' : 'must be a single header value') })
    .regex(/^[A-Za-z0-9_\-:.]{1,128}$/, { error: 'must be 1 to 128 characters of A-Z, a-z, 0-9 and _ - : .' }),
});

/** Body of POST /admin/v1/organisations/{id}/projects. */
export const createProjectBody = z.strictObject({
  name: displayText('Name of the project, 1..200 characters.'),
});

/**
 * Whether an upstream object's SSRF rule has something sound to judge: the input is an object
 * with a string base_url, and no earlier issue concerns base_url or allow_private_network.
 */
function upstreamRuleApplies(payload: { value: unknown; issues: readonly { path?: readonly PropertyKey[] | undefined }[] }): boolean {
  const value = payload.value;
  if (typeof value !== 'object' || value === null || typeof (value as { base_url?: unknown }).base_url !== 'string') return false;
  return !payload.issues.some((issue) => issue.path !== undefined && ['base_url', 'allow_private_network'].includes(String(issue.path[0])));
}

/**
 * What an embedding model's default_max_tokens is stored as when its create body leaves it out:
 * an embeddings call has no completion, so the proxy never reads it; 1 is the least the column
 * (and the proxy's snapshot check) takes, and it keeps max_context_tokens ≥ default_max_tokens.
 */
const embeddingDefaultMaxTokens = 1;

/**
 * Body of POST /admin/v1/gateway-models. A base URL is judged by the SSRF rule with private
 * addresses allowed when `policy` allows them (ADMIN_ALLOW_PRIVATE_UPSTREAMS) or the body sets
 * upstream.allow_private_network. A chat model must give default_max_tokens and its output
 * price; an embedding model may leave both out (1 and "0") and keeps to embeddingModelProblems.
 */
export function createGatewayModelBody(policy: UpstreamUrlPolicy) {
  // The fields and their own rules come from the one Gateway Model schema; the rules across fields are added here.
  return z.strictObject({
    ...gatewayModelCreateShape,
    default_max_tokens: gatewayModelCreateShape.default_max_tokens.optional().meta({
      description: 'max_tokens used to size the Reserve when a request gives none. Required for a chat model; an embedding model has no completion and may leave it out (stored as 1, never read).',
    }),
    output_price_micros_per_mtok: gatewayModelCreateShape.output_price_micros_per_mtok.optional().meta({
      description: 'Customer price of output tokens. Per million tokens. Micro-rupees (1 INR = 1,000,000), as a decimal string. Required for a chat model; an embedding model has none: "0" or left out.',
    }),
    upstream: gatewayModelCreateShape.upstream.superRefine((upstream, context) => {
      // Runs also when a sibling field (say provider_kind) is invalid, so every bad field is named;
      // a kind that is itself invalid leaves only the address rule to judge here.
      const kind = (providerKinds as readonly unknown[]).includes(upstream.provider_kind) ? upstream.provider_kind : apiVersionQueryProviderKind;
      const allowPrivate = allowsPrivateUpstream(policy.allowPrivate, upstream.allow_private_network === true);
      const problem = upstreamUrlProblem(upstream.base_url, { allowPrivate }, { providerKind: kind });
      if (problem) context.addIssue({ code: 'custom', path: ['base_url'], message: problem });
    }, { when: upstreamRuleApplies }),
  }).superRefine((body, context) => {
    if (body.kind === 'chat') {
      const modalities = modalityProblem(body.upstream.provider_kind, body.input_modalities);
      if (modalities !== undefined) context.addIssue({ code: 'custom', path: ['input_modalities'], message: modalities });
      if (body.default_max_tokens === undefined) context.addIssue({ code: 'custom', path: ['default_max_tokens'], message: 'is required' });
      if (body.output_price_micros_per_mtok === undefined) context.addIssue({ code: 'custom', path: ['output_price_micros_per_mtok'], message: 'is required' });
    } else {
      const problems = embeddingModelProblems({
        providerKind: body.upstream.provider_kind, outputPriceMicrosPerMtok: body.output_price_micros_per_mtok,
        providerOutputCostMicrosPerMtok: body.provider_output_cost_micros_per_mtok, inputModalities: body.input_modalities,
      });
      for (const problem of problems) context.addIssue({ code: 'custom', path: problem.param.split('.'), message: problem.message });
    }
    const reasoning = reasoningControlsProblem(body.upstream.provider_kind, body.kind, body.reasoning_efforts, body.thinking_modes);
    if (reasoning !== undefined) context.addIssue({ code: 'custom', path: [reasoning.param], message: reasoning.message });
    if (body.default_max_tokens !== undefined && body.max_context_tokens < body.default_max_tokens) {
      context.addIssue({ code: 'custom', path: ['max_context_tokens'], message: 'must be at least default_max_tokens' });
    }
  }).transform((body) => ({
    ...body,
    // Reached only by an embedding model without them: a chat model's body was refused above.
    default_max_tokens: body.default_max_tokens ?? embeddingDefaultMaxTokens,
    output_price_micros_per_mtok: body.output_price_micros_per_mtok ?? 0n,
  }));
}

/** The default and largest page sizes of the lists. */
export const pageSizes = { default: 20, max: 100, usageDefault: 50, usageMax: 500 } as const;

/** Query of the cursor-paged lists (organisations, projects, gateway models). */
export const listQuery = z.strictObject({
  limit: pageLimit(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).min(1).max(200)
    .optional()
    .meta({ description: 'Return the items after this one (its id, or its slug for gateway models).' }),
});

/** The latest instant a window bound may name, ms since the epoch (the ledger's limit: year 9999). */
const maxInstantMs = 253_402_300_799_999;

/**
 * An instant given as a query parameter, as ms since the epoch: either ms since the epoch (digits)
 * or an ISO-8601 date-time with an offset. 1 ms .. year 9999, the ledger's window bounds.
 */
export function instantMs(description: string) {
  const message = 'must be ms since the epoch or an ISO-8601 date-time such as 2026-11-01T00:00:00+05:30';
  return z.string({ error: 'must be given once' })
    .refine((value) => /^\d{1,15}$/.test(value) || z.iso.datetime({ offset: true }).safeParse(value).success, { error: message })
    .transform((value) => (/^\d+$/.test(value) ? Number(value) : Date.parse(value)))
    .pipe(z.number().int().min(1, { error: 'must be after 1970-01-01T00:00:00Z' }).max(maxInstantMs, { error: 'must be before the year 10000' }))
    .optional()
    .meta({ description });
}

/** Refuses a window whose `to` is not after its `from` (400 naming `to`). */
export function windowInOrder(query: { from?: number | undefined; to?: number | undefined }, context: z.RefinementCtx): void {
  if (query.from !== undefined && query.to !== undefined && query.from >= query.to) {
    context.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
  }
}

/** Query of GET /admin/v1/organisations/{id}/usage. */
export const usageQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  model: gatewayModelSlug.optional().meta({ description: 'Only this gateway model slug.' }),
  limit: pageLimit(pageSizes.usageMax, pageSizes.usageDefault),
  cursor: z.string({ error: 'must be given once' }).min(1).max(1024, { error: 'must be at most 1024 characters' })
    .optional()
    .meta({ description: 'next_cursor of the previous page.' }),
  from: instantMs('Only records created at or after this instant (inclusive): ms since the epoch or ISO-8601.'),
  to: instantMs('Only records created before this instant (exclusive): ms since the epoch or ISO-8601.'),
}).superRefine(windowInOrder);

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

/**
 * Body of PATCH /admin/v1/gateway-models/{slug}: any field but the slug and provider kind; at
 * least one. A base URL's form is judged here, and the SSRF address rule too when the body gives
 * upstream.allow_private_network beside it (with `policy`, ADMIN_ALLOW_PRIVATE_UPSTREAMS);
 * otherwise the service judges it with the model's stored flag, which only it knows.
 */
export function updateGatewayModelBody(policy: UpstreamUrlPolicy) {
  // The fields and their own rules come from the one Gateway Model schema; the rules across fields are added here.
  const upstreamFields = Object.keys(gatewayModelUpdateShape.upstream.shape).join(', ');
  return z.strictObject({
    ...gatewayModelUpdateShape,
    upstream: gatewayModelUpdateShape.upstream.refine((upstream) => Object.keys(upstream).length > 0, {
      error: `must change at least one of ${upstreamFields}`,
    }).superRefine((upstream, context) => {
      // The stored kind is unknown here: a query is left to the service, only the address rule is judged.
      const allowPrivate = allowsPrivateUpstream(policy.allowPrivate, upstream.allow_private_network === true);
      const problem = upstreamUrlProblem(upstream.base_url!, { allowPrivate }, { providerKind: apiVersionQueryProviderKind });
      if (problem) context.addIssue({ code: 'custom', path: ['base_url'], message: problem });
    }, { when: (payload) => upstreamRuleApplies(payload) && typeof (payload.value as { allow_private_network?: unknown }).allow_private_network === 'boolean' })
      .optional(),
  }).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });
}

/** Body of the token-issuing routes. */
export const createTokenBody = z.strictObject({
  name: displayText('What the token is for, e.g. "billing automation". 1..200 characters.'),
});

/** Query of GET /admin/v1/audit-events. */
export const auditEventsQuery = z.strictObject({
  organisation_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this organisation\'s events.' }),
  limit: pageLimit(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).regex(/^\d{1,19}$/, { error: 'must be the id of an audit event' })
    .transform((value) => BigInt(value))
    .optional()
    .meta({ description: 'Return the events after this one (its id).' }),
});

/** Query of GET /admin/v1/organisations/{id}/usage/summary. */
export const usageSummaryQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  from: instantMs('Start of the window (inclusive), ISO-8601 or ms since the epoch; default: unbounded.'),
  to: instantMs('End of the window (exclusive), ISO-8601 or ms since the epoch; default: unbounded.'),
  group_by: z.enum(['project'], { error: 'must be "project"' }).optional()
    .meta({ description: 'project: rows are also split by project (and carry project_id).' }),
}).superRefine(windowInOrder);
