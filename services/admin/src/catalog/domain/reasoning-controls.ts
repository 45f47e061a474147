import type { ProviderKind } from './provider-kinds.ts';

/** Effort levels Anthropic's `output_config.effort` takes. */
const anthropicEfforts: ReadonlySet<string> = new Set(['low', 'medium', 'high', 'max']);
/** Effort levels OpenAI-compatible `reasoning_effort` takes. */
const openAiEfforts: ReadonlySet<string> = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);

/** A reasoning control that does not fit the model, and the field that says it. */
interface ReasoningControlsProblem {
  param: 'reasoning_efforts' | 'thinking_modes';
  message: string;
}

/**
 * Why a model's reasoning controls do not fit its provider kind and kind, or undefined: an effort
 * its upstream's API has no such level for, thinking modes on an upstream that is not Anthropic's
 * (the proxy would send `thinking` nowhere), or any control on an embedding model. Fields not
 * given (an update that leaves them) are not judged.
 */
export function reasoningControlsProblem(
  providerKind: ProviderKind, kind: 'chat' | 'embedding', efforts: readonly string[] | undefined, thinkingModes: readonly string[] | undefined,
): ReasoningControlsProblem | undefined {
  if (kind === 'embedding') {
    if (efforts !== undefined && efforts.length > 0) return { param: 'reasoning_efforts', message: 'must be [] for an embedding model' };
    if (thinkingModes !== undefined && thinkingModes.length > 0) return { param: 'thinking_modes', message: 'must be [] for an embedding model' };
    return undefined;
  }
  const accepted = providerKind === 'anthropic' ? anthropicEfforts : openAiEfforts;
  const wrong = efforts?.find((effort) => !accepted.has(effort));
  if (wrong !== undefined) {
    return { param: 'reasoning_efforts', message: `"${wrong}" is not an effort level of the ${providerKind} provider kind (${[...accepted].join(', ')})` };
  }
  if (providerKind !== 'anthropic' && thinkingModes !== undefined && thinkingModes.length > 0) {
    return { param: 'thinking_modes', message: 'must be [] for a provider kind other than anthropic: only Anthropic\'s API takes thinking' };
  }
  return undefined;
}
