import { z } from 'zod';
import { gatewayModelSlugPattern } from '../domain/gateway-models-service.ts';
import { apiVersionQueryProviderKind, providerKinds } from '../domain/provider-kinds.ts';
import { allowsPrivateUpstream, upstreamUrlProblem, type UpstreamUrlPolicy } from '../domain/upstream-url.ts';

/** The largest single manual credit, µ₹ (₹1,000,000,000): a guard against a slipped finger. */
export const maxCreditMicros = 1_000_000_000_000_000n;
/** The largest price or cost per million tokens, µ₹ (₹1,000,000,000 per million tokens). */
export const maxPriceMicrosPerMtok = 1_000_000_000_000_000n;

const moneyFormatMessage = 'must be a whole number of micro-rupees as a decimal string, e.g. "1500000" (a JSON number is accepted only if it is a safe integer)';

/**
 * A money amount in µ₹: a decimal string of digits, or a JSON integer within the safe range
 * (a larger JSON number has already lost precision when it was parsed). Becomes a bigint.
 */
export function moneyMicros(range: { min: bigint; max: bigint }, description: string) {
  return z.union([
    z.string().regex(/^\d{1,30}$/, { error: moneyFormatMessage }),
    z.number().int({ error: moneyFormatMessage }),
  ], { error: (issue) => (issue.input === undefined ? 'is required' : moneyFormatMessage) })
    .transform((value) => BigInt(value))
    .pipe(z.bigint()
      .min(range.min, { error: `must be at least ${range.min}` })
      .max(range.max, { error: `must be at most ${range.max}` }))
    .meta({ description: `${description} Micro-rupees (1 INR = 1,000,000), as a decimal string.` });
}

/** A bounded integer with one message naming its range. */
function integerIn(min: number, max: number, description: string) {
  const message = `must be an integer between ${min} and ${max}`;
  return z.number({ error: (issue) => (issue.input === undefined ? 'is required' : message) })
    .int({ error: message }).min(min, { error: message }).max(max, { error: message })
    .meta({ description });
}

/** A display name: trimmed, 1..200 characters. */
function displayText(description: string, maxLength = 200) {
  return z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(maxLength, { error: `must be at most ${maxLength} characters` })
    .meta({ description });
}

/** A gateway model slug, e.g. `acme-chat` or `openai/gpt-4o-mini`. */
export const gatewayModelSlug = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(gatewayModelSlugPattern, { error: 'must be 1 to 128 characters of a-z, 0-9 and . _ : / -, starting with a letter or digit' })
  .meta({ description: 'Customer-facing model name.', examples: ['acme-chat'] });

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

/** The SSRF policy that judges only a base URL's form: http and internal addresses let through. */
const formOnly: UpstreamUrlPolicy = { allowPrivate: true };

/**
 * An upstream base URL. Its form alone is judged here (an `?api-version=…` query, http and
 * internal addresses are let through): the SSRF address rule depends on the model's
 * upstream.allow_private_network, and whether its provider kind may carry that query on the
 * kind, so both are judged where those are known (the create body's upstream object below; for
 * a PATCH, its upstream object when the body gives the flag, else the service).
 */
function upstreamBaseUrl() {
  return z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .max(2048, { error: 'must be at most 2048 characters' })
    .superRefine((value, context) => {
      const problem = upstreamUrlProblem(value, formOnly, { providerKind: apiVersionQueryProviderKind });
      if (problem) context.addIssue({ code: 'custom', message: problem });
    })
    .meta({
      description: 'https URL of the provider\'s API, e.g. https://api.openai.com/v1 or https://api.anthropic.com/v1 (see docs/admin-api.md for each kind). '
        + 'No credentials, query or fragment, except azure_openai\'s ?api-version=YYYY-MM-DD[-preview]. http, private, loopback and other internal addresses, and host names that resolve to one, '
        + 'are refused (SSRF) unless the model has upstream.allow_private_network true (or the admin runs with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true).',
    });
}

/** A gateway model's explicit SSRF exception (see docs/admin-api.md "Upstream base URLs"). */
const upstreamAllowPrivateNetwork = z.boolean({ error: 'must be true or false' })
  .meta({
    description: 'true: the explicit, audited SSRF exception for this model: its base_url may use http and a private, loopback or otherwise internal address '
      + '(a self-hosted vLLM or ollama on a private network), and proxies skip their connect-time address check for it. Turning it off is refused while base_url needs it.',
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

/** The upstream provider kind of a gateway model. */
const providerKind = z.enum(providerKinds, { error: `must be one of ${providerKinds.map((kind) => `"${kind}"`).join(', ')}` })
  .meta({ description: 'How the proxy talks to the upstream: openai_compatible (any OpenAI-compatible server), openai, azure_openai, vllm, ollama, groq, together, or anthropic (Messages API).' });

/** A provider credential: no whitespace, at most 4096 characters. */
const upstreamApiKey = z.string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(4096, { error: 'must be at most 4096 characters' })
  .regex(/^\S+$/, { error: 'must not contain whitespace' });

/**
 * Body of POST /admin/v1/gateway-models. A base URL is judged by the SSRF rule with private
 * addresses allowed when `policy` allows them (ADMIN_ALLOW_PRIVATE_UPSTREAMS) or the body sets
 * upstream.allow_private_network.
 */
export function createGatewayModelBody(policy: UpstreamUrlPolicy) {
  const price = (description: string) => moneyMicros({ min: 0n, max: maxPriceMicrosPerMtok }, `${description} Per million tokens.`);
  return z.strictObject({
    slug: gatewayModelSlug,
    display_name: displayText('Shown to customers; defaults to the slug. 1..200 characters.').optional(),
    default_max_tokens: integerIn(1, 1_000_000, 'max_tokens used to size the Reserve when a request gives none.'),
    max_context_tokens: integerIn(1, 10_000_000, 'Largest prompt + completion the upstream accepts, tokens; at least default_max_tokens.'),
    input_price_micros_per_mtok: price('Customer price of input tokens.'),
    output_price_micros_per_mtok: price('Customer price of output tokens.'),
    provider_input_cost_micros_per_mtok: price('What the provider charges for input tokens (recorded, never billed). Default "0".').optional(),
    provider_output_cost_micros_per_mtok: price('What the provider charges for output tokens (recorded, never billed). Default "0".').optional(),
    upstream: z.strictObject({
      provider_kind: providerKind,
      base_url: upstreamBaseUrl(),
      model: displayText("The provider's model name; never shown to customers."),
      api_key: upstreamApiKey.optional()
        .meta({ description: 'The provider credential. Stored encrypted (AES-256-GCM); never returned.', writeOnly: true }),
      allow_private_network: upstreamAllowPrivateNetwork.default(false),
    }, { error: (issue) => (issue.input === undefined ? 'is required' : 'must be a JSON object') }).superRefine((upstream, context) => {
      // Runs also when a sibling field (say provider_kind) is invalid, so every bad field is named;
      // a kind that is itself invalid leaves only the address rule to judge here.
      const kind = (providerKinds as readonly unknown[]).includes(upstream.provider_kind) ? upstream.provider_kind : apiVersionQueryProviderKind;
      const allowPrivate = allowsPrivateUpstream(policy.allowPrivate, upstream.allow_private_network === true);
      const problem = upstreamUrlProblem(upstream.base_url, { allowPrivate }, { providerKind: kind });
      if (problem) context.addIssue({ code: 'custom', path: ['base_url'], message: problem });
    }, { when: upstreamRuleApplies }),
  }).superRefine((body, context) => {
    if (body.max_context_tokens < body.default_max_tokens) {
      context.addIssue({ code: 'custom', path: ['max_context_tokens'], message: 'must be at least default_max_tokens' });
    }
  });
}

/** A positive page size given as a query parameter. */
function pageSize(max: number, fallback: number) {
  const message = `must be an integer between 1 and ${max}`;
  return z.string({ error: 'must be given once' })
    .regex(/^\d{1,7}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: message }).max(max, { error: message }))
    .optional()
    .meta({ description: `Items per page, 1..${max}; default ${fallback}.` });
}

/** The default and largest page sizes of the lists. */
export const pageSizes = { default: 20, max: 100, usageDefault: 50, usageMax: 500 } as const;

/** Query of the cursor-paged lists (organisations, projects, gateway models). */
export const listQuery = z.strictObject({
  limit: pageSize(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).min(1).max(200)
    .optional()
    .meta({ description: 'Return the items after this one (its id, or its slug for gateway models).' }),
});

/** Query of GET /admin/v1/organisations/{id}/usage. */
export const usageQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  model: gatewayModelSlug.optional().meta({ description: 'Only this gateway model slug.' }),
  limit: pageSize(pageSizes.usageMax, pageSizes.usageDefault),
  cursor: z.string({ error: 'must be given once' }).min(1).max(1024, { error: 'must be at most 1024 characters' })
    .optional()
    .meta({ description: 'next_cursor of the previous page.' }),
});

/** Body of PATCH /admin/v1/projects/{id}: a new name and/or status (disabled: its key is refused). */
export const updateProjectBody = z.strictObject({
  name: displayText('Name of the project, 1..200 characters.').optional(),
  status: z.enum(['active', 'disabled'], { error: 'must be "active" or "disabled"' })
    .optional()
    .meta({ description: 'disabled: every proxy refuses the project\'s key (401) until it is active again.' }),
}).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one of name, status' });

/** The largest monthly project budget, µ₹ (₹1,000,000,000). */
export const maxBudgetMicros = 1_000_000_000_000_000n;

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
  const price = (description: string) => moneyMicros({ min: 0n, max: maxPriceMicrosPerMtok }, `${description} Per million tokens.`).optional();
  return z.strictObject({
    display_name: displayText('Shown to customers. 1..200 characters.').optional(),
    default_max_tokens: integerIn(1, 1_000_000, 'max_tokens used to size the Reserve when a request gives none.').optional(),
    max_context_tokens: integerIn(1, 10_000_000, 'Largest prompt + completion the upstream accepts, tokens; at least default_max_tokens.').optional(),
    input_price_micros_per_mtok: price('Customer price of input tokens.'),
    output_price_micros_per_mtok: price('Customer price of output tokens.'),
    provider_input_cost_micros_per_mtok: price('What the provider charges for input tokens (recorded, never billed).'),
    provider_output_cost_micros_per_mtok: price('What the provider charges for output tokens (recorded, never billed).'),
    upstream: z.strictObject({
      base_url: upstreamBaseUrl().optional(),
      model: displayText("The provider's model name; never shown to customers.").optional(),
      api_key: upstreamApiKey.nullable().optional()
        .meta({ description: 'A new provider credential (stored encrypted, never returned), or null to remove it.', writeOnly: true }),
      allow_private_network: upstreamAllowPrivateNetwork.optional(),
    }, { error: 'must be a JSON object' }).refine((upstream) => Object.keys(upstream).length > 0, {
      error: 'must change at least one of base_url, model, api_key, allow_private_network',
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
  limit: pageSize(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).regex(/^\d{1,19}$/, { error: 'must be the id of an audit event' })
    .transform((value) => BigInt(value))
    .optional()
    .meta({ description: 'Return the events after this one (its id).' }),
});

/** An ISO-8601 instant given as a query parameter, as ms since the epoch. */
function instantMs(description: string) {
  return z.string({ error: 'must be given once' })
    .refine((value) => z.iso.datetime({ offset: true }).safeParse(value).success, { error: 'must be an ISO-8601 date-time such as 2026-11-01T00:00:00+05:30' })
    .transform((value) => Date.parse(value))
    .optional()
    .meta({ description });
}

/** Query of GET /admin/v1/organisations/{id}/usage/summary. */
export const usageSummaryQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  from: instantMs('Start of the window (inclusive), ISO-8601; default: unbounded.'),
  to: instantMs('End of the window (exclusive), ISO-8601; default: unbounded.'),
}).superRefine((query, context) => {
  if (query.from !== undefined && query.to !== undefined && query.from >= query.to) {
    context.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
  }
});
