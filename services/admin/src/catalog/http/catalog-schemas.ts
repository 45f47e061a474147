import { z } from 'zod';
import { gatewayModelCreateShape, gatewayModelShown, gatewayModelUpdateShape } from './gateway-model-schema.ts';
import { embeddingModelProblems, modalityProblem } from '../domain/gateway-model-rules.ts';
import { reasoningControlsProblem } from '../domain/reasoning-controls.ts';
import { apiVersionQueryProviderKind, providerKinds } from '../domain/provider-kinds.ts';
import { allowsPrivateUpstream, upstreamUrlProblem, type UpstreamUrlPolicy } from '../domain/upstream-url.ts';

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
