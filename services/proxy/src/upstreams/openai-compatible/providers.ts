import type { UpstreamAdapter } from '../upstream-adapter.ts';
import { createOpenAiCompatibleAdapter, openAiCompatibleAdapter } from './adapter.ts';

/**
 * The OpenAI-compatible providers, each a short configuration over one base adapter. They
 * differ only in how the credential travels, which field carries max_tokens, a required query
 * string, and which optional params they refuse.
 */
export const openAiCompatibleAdapters: readonly UpstreamAdapter[] = [
  openAiCompatibleAdapter,
  createOpenAiCompatibleAdapter({ providerKind: 'openai', credentialHeader: 'bearer', maxTokensField: 'max_completion_tokens', promptCacheKey: 'always' }),
  // base_url: https://<resource>.openai.azure.com/openai/deployments/<deployment>; the deployment picks the model.
  createOpenAiCompatibleAdapter({
    providerKind: 'azure_openai', credentialHeader: 'api-key', maxTokensField: 'max_completion_tokens', defaultQuery: 'api-version=2024-10-21',
    promptCacheKey: 'always',
  }),
  createOpenAiCompatibleAdapter({ providerKind: 'vllm', credentialHeader: 'bearer', maxTokensField: 'max_tokens' }),
  createOpenAiCompatibleAdapter({
    providerKind: 'ollama', credentialHeader: 'bearer', maxTokensField: 'max_tokens', unsupportedParams: ['logit_bias', 'logprobs', 'top_logprobs'],
  }),
  createOpenAiCompatibleAdapter({
    providerKind: 'groq', credentialHeader: 'bearer', maxTokensField: 'max_tokens', unsupportedParams: ['logit_bias', 'logprobs', 'top_logprobs'],
  }),
  createOpenAiCompatibleAdapter({ providerKind: 'together', credentialHeader: 'bearer', maxTokensField: 'max_tokens' }),
];
