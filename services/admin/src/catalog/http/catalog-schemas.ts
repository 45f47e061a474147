import { z } from 'zod';
import { gatewayModelCreateShape, gatewayModelShown, gatewayModelUpdateShape } from './gateway-model-schema.ts';
import { embeddingModelProblems, modalityProblem } from '../domain/gateway-model-rules.ts';
import { reasoningControlsProblem } from '../domain/reasoning-controls.ts';
import { apiVersionQueryProviderKind, providerKinds } from '../domain/provider-kinds.ts';
import { allowsPrivateUpstream, upstreamUrlProblem, type UpstreamUrlPolicy } from '../domain/upstream-url.ts';
import { deploymentNamePattern } from '../domain/upstream-deployment-store.ts';
import { gatewayModelSlug, deploymentPriority, deploymentWeight } from './gateway-model-schema.ts';
import { prefixedId } from '../../common/http/response-schemas.ts';
import { timestampShown } from '../../common/http/wire-fields.ts';

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

/** A gateway model; its upstream shows whether a credential is set, never the credential (from the one Gateway Model schema). */
export const gatewayModelResponse = gatewayModelShown;

/** An upstream deployment's name as a request gives it. */
const deploymentName = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(deploymentNamePattern, { error: 'must be 1 to 32 characters of a-z, 0-9 and -, starting with a letter or digit' })
  .meta({
    description: 'Unique within the gateway model; "primary" is the model\'s own upstream (409). An operator\'s label for metrics, usage records and analytics: never shown to customers.',
    examples: ['azure-eu'],
  });

/** The provider cost fields of a deployment: a gateway model's, with the same rules and descriptions. */
const deploymentCostKeys = [
  'provider_input_cost_micros_per_mtok', 'provider_output_cost_micros_per_mtok', 'provider_cached_input_cost_micros_per_mtok',
  'provider_cache_write_5m_cost_micros_per_mtok', 'provider_cache_write_1h_cost_micros_per_mtok', 'provider_reasoning_cost_micros_per_mtok',
  'provider_audio_input_cost_micros_per_mtok', 'provider_image_input_cost_micros_per_mtok',
] as const;

/** The provider cost fields of one face of the Gateway Model schema (create, update or shown). */
function deploymentCostShape<Shape extends Record<(typeof deploymentCostKeys)[number], z.ZodType>>(shape: Shape): Pick<Shape, (typeof deploymentCostKeys)[number]> {
  return Object.fromEntries(deploymentCostKeys.map((key) => [key, shape[key]])) as Pick<Shape, (typeof deploymentCostKeys)[number]>;
}

/**
 * Body of POST /admin/v1/upstream-deployments: the deployment's upstream is judged by the SSRF
 * rule exactly as a gateway model's (with `policy`, or its own upstream.allow_private_network).
 */
export function createUpstreamDeploymentBody(policy: UpstreamUrlPolicy) {
  const upstream = gatewayModelCreateShape.upstream.shape;
  return z.strictObject({
    gateway_model: gatewayModelSlug.meta({ description: 'Slug of the gateway model the deployment serves.', examples: ['acme-chat'] }),
    name: deploymentName,
    priority: deploymentPriority.default(0),
    weight: deploymentWeight.default(1),
    upstream: z.strictObject({
      provider_kind: upstream.provider_kind, base_url: upstream.base_url, model: upstream.model,
      api_key: upstream.api_key, allow_private_network: upstream.allow_private_network,
    }, { error: (issue) => (issue.input === undefined ? 'is required' : 'must be a JSON object') }).superRefine((given, context) => {
      const kind = (providerKinds as readonly unknown[]).includes(given.provider_kind) ? given.provider_kind : apiVersionQueryProviderKind;
      const allowPrivate = allowsPrivateUpstream(policy.allowPrivate, given.allow_private_network === true);
      const problem = upstreamUrlProblem(given.base_url, { allowPrivate }, { providerKind: kind });
      if (problem) context.addIssue({ code: 'custom', path: ['base_url'], message: problem });
    }, { when: upstreamRuleApplies }),
    ...deploymentCostShape(gatewayModelCreateShape),
  });
}

/**
 * Body of PATCH /admin/v1/upstream-deployments/{id}: priority, weight, the upstream's base URL,
 * model, credential and exception, and the costs; at least one. The name, the model and the
 * provider kind are fixed. The SSRF address rule is judged here when the body gives the
 * exception beside the URL, otherwise by the service with the stored exception.
 */
export function updateUpstreamDeploymentBody(policy: UpstreamUrlPolicy) {
  const upstream = gatewayModelUpdateShape.upstream.shape;
  return z.strictObject({
    priority: deploymentPriority.optional(),
    weight: deploymentWeight.optional(),
    upstream: z.strictObject({
      base_url: upstream.base_url, model: upstream.model, api_key: upstream.api_key, allow_private_network: upstream.allow_private_network,
    }, { error: 'must be a JSON object' }).refine((given) => Object.keys(given).length > 0, {
      error: 'must change at least one of base_url, model, api_key, allow_private_network',
    }).superRefine((given, context) => {
      const allowPrivate = allowsPrivateUpstream(policy.allowPrivate, given.allow_private_network === true);
      const problem = upstreamUrlProblem(given.base_url!, { allowPrivate }, { providerKind: apiVersionQueryProviderKind });
      if (problem) context.addIssue({ code: 'custom', path: ['base_url'], message: problem });
    }, { when: (payload) => upstreamRuleApplies(payload) && typeof (payload.value as { allow_private_network?: unknown }).allow_private_network === 'boolean' })
      .optional(),
    ...deploymentCostShape(gatewayModelUpdateShape),
  }).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });
}

/** An upstream deployment as a response shows it: the credential only as has_api_key; money as decimal strings. */
export const upstreamDeploymentResponse = z.strictObject({
  id: prefixedId('udep', 'upstream deployment'),
  gateway_model: z.string().meta({ description: 'Slug of the gateway model it serves.' }),
  name: z.string().meta({ description: 'Unique within the model; never shown to customers.' }),
  priority: z.int().meta({ description: 'Lower is tried first, 0..100.' }),
  weight: z.int().meta({ description: 'Share of the requests within its priority, 1..1000.' }),
  upstream: z.strictObject({
    provider_kind: gatewayModelShown.shape.upstream.shape.provider_kind,
    base_url: gatewayModelShown.shape.upstream.shape.base_url,
    model: gatewayModelShown.shape.upstream.shape.model,
    has_api_key: gatewayModelShown.shape.upstream.shape.has_api_key,
    allow_private_network: gatewayModelShown.shape.upstream.shape.allow_private_network,
  }),
  ...deploymentCostShape(gatewayModelShown.shape),
  created_at: timestampShown,
  updated_at: timestampShown,
});
