import type { NewGatewayModel } from './gateway-model-store.ts';
import { tokenClassPricesAt } from './gateway-model-rules.ts';

/** The built-in demo model, seeded when DEMO_UPSTREAM_URL is set (its base URL is that setting). */
export const demoGatewayModel = {
  slug: 'demo',
  displayName: 'Demo (built-in demo upstream, no provider account)',
  defaultMaxTokens: 256,
  // Room for an agent's prompt (Claude Code's system prompt and tools are tens of thousands of
  // tokens) with the demo upstream, which has no limit of its own.
  maxContextTokens: 200_000,
  inputPriceMicrosPerMtok: 1_000_000n, // ₹1 per million input tokens
  outputPriceMicrosPerMtok: 2_000_000n, // ₹2 per million output tokens
  providerInputCostMicrosPerMtok: 0n,
  providerOutputCostMicrosPerMtok: 0n,
  ...tokenClassPricesAt(1_000_000n, 0n),
  kind: 'chat',
  // The demo upstream reads only the text, but takes image and audio parts: a user can try them on it.
  inputModalities: ['text', 'image', 'audio'],
  // The demo upstream reasons on request (`reasoning_effort`, answered with `reasoning_content`),
  // so the agents' efforts are served: Claude Code sends `output_config.effort` with its built-in
  // names, which a model without efforts refuses (docs/surfaces/reasoning.md).
  reasoningEfforts: ['low', 'medium', 'high'],
  thinkingModes: [],
  maxThinkingBudgetTokens: 0,
  returnsReasoning: true,
  // No per-model exception: the demo relies on the platform-wide private-upstream setting, as before.
  upstream: { providerKind: 'openai_compatible', model: 'demo', allowPrivateNetwork: false, priority: 0, weight: 1 },
  upstreamApiKeyEncrypted: null,
} as const satisfies Omit<NewGatewayModel, 'upstream'> & { upstream: Omit<NewGatewayModel['upstream'], 'baseUrl'> };

/**
 * The built-in demo embedding model, seeded beside `demo` on the same upstream (the demo
 * upstream serves /v1/embeddings), so /v1/embeddings can be tried without a provider account.
 */
export const demoEmbeddingModel = {
  slug: 'demo-embedding',
  displayName: 'Demo embeddings (built-in demo upstream, no provider account)',
  // What a create of an embedding model without it stores: an embedding call has no completion, so it is never read.
  defaultMaxTokens: 1,
  maxContextTokens: 8192,
  inputPriceMicrosPerMtok: 1_000_000n, // ₹1 per million input tokens
  outputPriceMicrosPerMtok: 0n,
  providerInputCostMicrosPerMtok: 0n,
  providerOutputCostMicrosPerMtok: 0n,
  ...tokenClassPricesAt(1_000_000n, 0n),
  kind: 'embedding',
  inputModalities: ['text'],
  reasoningEfforts: [],
  thinkingModes: [],
  maxThinkingBudgetTokens: 0,
  returnsReasoning: false,
  upstream: { providerKind: 'openai_compatible', model: 'demo-embedding', allowPrivateNetwork: false, priority: 0, weight: 1 },
  upstreamApiKeyEncrypted: null,
} as const satisfies Omit<NewGatewayModel, 'upstream'> & { upstream: Omit<NewGatewayModel['upstream'], 'baseUrl'> };
