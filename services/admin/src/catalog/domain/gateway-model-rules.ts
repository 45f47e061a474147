import { GatewayError } from '@gateway/errors';
import type { StoredGatewayModel } from './gateway-model-store.ts';
import { inputClassPriceKeys, type CreateGatewayModelInput, type UpdateGatewayModelInput } from './gateway-model-fields.ts';
import type { ProviderKind } from './provider-kinds.ts';
import { reasoningControlsProblem } from './reasoning-controls.ts';

/** The token class prices of a model priced at its input price (cost) for every input class and as output for reasoning. */
export function tokenClassPricesAt(inputPrice: bigint, providerInputCost: bigint) {
  return {
    cachedInputPriceMicrosPerMtok: inputPrice, cacheWrite5mPriceMicrosPerMtok: inputPrice, cacheWrite1hPriceMicrosPerMtok: inputPrice,
    audioInputPriceMicrosPerMtok: inputPrice, imageInputPriceMicrosPerMtok: inputPrice, reasoningPriceMicrosPerMtok: null,
    providerCachedInputCostMicrosPerMtok: providerInputCost, providerCacheWrite5mCostMicrosPerMtok: providerInputCost,
    providerCacheWrite1hCostMicrosPerMtok: providerInputCost, providerAudioInputCostMicrosPerMtok: providerInputCost,
    providerImageInputCostMicrosPerMtok: providerInputCost, providerReasoningCostMicrosPerMtok: null,
  };
}

/**
 * A create input with every input class's price (cost) it leaves out set to its input price
 * (cost): a model created without a per-class sheet bills every input token alike, as before
 * prices by token class. The values are copied, not linked: a later input price change leaves them be.
 */
export function withInputClassDefaults(input: CreateGatewayModelInput) {
  const filled: Record<string, unknown> = { ...input };
  for (const [priceKey, costKey] of inputClassPriceKeys) {
    filled[priceKey] ??= input.inputPriceMicrosPerMtok;
    filled[costKey] ??= input.providerInputCostMicrosPerMtok;
  }
  return filled as CreateGatewayModelInput & ReturnType<typeof tokenClassPricesAt>;
}

/**
 * Why a chat model's input modalities do not fit its provider kind, or undefined: Anthropic's
 * Messages API takes no audio, so a model that promised audio would refuse it in the proxy's
 * adapter with words no other slug uses (which would tell a customer the vendor).
 */
export function modalityProblem(providerKind: ProviderKind, inputModalities: readonly string[] | undefined): string | undefined {
  if (providerKind === 'anthropic' && inputModalities?.includes('audio') === true) return 'must not include "audio" for the anthropic provider kind: its API takes no audio input';
  return undefined;
}

/** The fields of a gateway model that the embedding rules judge, as a create gives them or an update changes them. */
interface EmbeddingRuleFields {
  providerKind?: ProviderKind | undefined;
  outputPriceMicrosPerMtok?: bigint | undefined;
  providerOutputCostMicrosPerMtok?: bigint | undefined;
  inputModalities?: readonly string[] | undefined;
}

/** One field an embedding model may not have as given: its API name and why. */
interface EmbeddingRuleProblem {
  param: 'upstream.provider_kind' | 'output_price_micros_per_mtok' | 'provider_output_cost_micros_per_mtok' | 'input_modalities';
  message: string;
}

/**
 * What an embedding model may not be, for the fields given (absent ones are not judged): served
 * by an OpenAI-compatible provider kind (Anthropic's API has no embeddings), priced by its input
 * tokens only (it produces no output tokens, so an output price or cost other than 0 would
 * promise a charge that never happens), and fed text only. The create body's rules
 * (catalog/http/catalog-schemas.ts) and an update of a stored embedding model both ask it, so both say the same.
 */
export function embeddingModelProblems(fields: EmbeddingRuleFields): EmbeddingRuleProblem[] {
  const problems: EmbeddingRuleProblem[] = [];
  if (fields.providerKind === 'anthropic') {
    problems.push({ param: 'upstream.provider_kind', message: 'an embedding model needs an OpenAI-compatible provider kind: the Anthropic API has no embeddings' });
  }
  if (fields.outputPriceMicrosPerMtok !== undefined && fields.outputPriceMicrosPerMtok !== 0n) {
    problems.push({ param: 'output_price_micros_per_mtok', message: 'must be "0" for an embedding model: it is priced by its input tokens only' });
  }
  if (fields.providerOutputCostMicrosPerMtok !== undefined && fields.providerOutputCostMicrosPerMtok !== 0n) {
    problems.push({ param: 'provider_output_cost_micros_per_mtok', message: 'must be "0" for an embedding model: it produces no output tokens' });
  }
  if (fields.inputModalities !== undefined && (fields.inputModalities.length !== 1 || fields.inputModalities[0] !== 'text')) {
    problems.push({ param: 'input_modalities', message: 'must be ["text"] for an embedding model' });
  }
  return problems;
}

/**
 * Refuses (400) an update whose fields, merged with the stored model, break a rule across
 * fields: an embedding model's rules (its kind is fixed at create), the provider kind's
 * modalities and reasoning controls, and max_context_tokens ≥ default_max_tokens.
 */
export function requireUpdateFits(current: StoredGatewayModel, input: UpdateGatewayModelInput): void {
  // The kind is fixed at create: an update of an embedding model keeps to its rules.
  const [problem] = current.kind === 'embedding' ? embeddingModelProblems(input) : [];
  if (problem !== undefined) {
    throw new GatewayError('invalid_request', { publicMessage: `Invalid request: ${problem.param}: ${problem.message}.`, param: problem.param });
  }
  const modalities = modalityProblem(current.upstream.providerKind, input.inputModalities);
  if (modalities !== undefined) {
    throw new GatewayError('invalid_request', { publicMessage: `Invalid request: input_modalities: ${modalities}.`, param: 'input_modalities' });
  }
  const reasoning = reasoningControlsProblem(current.upstream.providerKind, current.kind, input.reasoningEfforts, input.thinkingModes);
  if (reasoning !== undefined) {
    throw new GatewayError('invalid_request', { publicMessage: `Invalid request: ${reasoning.param}: ${reasoning.message}.`, param: reasoning.param });
  }
  const defaultMaxTokens = input.defaultMaxTokens ?? current.defaultMaxTokens;
  const maxContextTokens = input.maxContextTokens ?? current.maxContextTokens;
  if (maxContextTokens < defaultMaxTokens) {
    throw new GatewayError('invalid_request', {
      publicMessage: `Invalid request: max_context_tokens: must be at least default_max_tokens (${defaultMaxTokens}).`,
      param: input.maxContextTokens !== undefined ? 'max_context_tokens' : 'default_max_tokens',
    });
  }
}

/**
 * Refuses (400) an update whose input modalities or reasoning controls one of the model's further
 * upstream deployments, of `providerKind`, cannot serve (the rules the model's own kind is held
 * to by requireUpdateFits): a failover to it would refuse in words no other deployment uses.
 */
export function requireUpdateFitsDeploymentKind(current: StoredGatewayModel, input: UpdateGatewayModelInput, providerKind: ProviderKind): void {
  const modalities = modalityProblem(providerKind, input.inputModalities);
  const reasoning = reasoningControlsProblem(providerKind, current.kind, input.reasoningEfforts, input.thinkingModes);
  const problem = modalities === undefined ? reasoning : { param: 'input_modalities' as const, message: modalities };
  if (problem !== undefined) {
    throw new GatewayError('invalid_request', {
      publicMessage: `Invalid request: ${problem.param}: ${problem.message} (an upstream deployment of this model has that provider kind).`,
      param: problem.param,
    });
  }
}
