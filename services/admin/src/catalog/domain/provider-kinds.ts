/**
 * The upstream provider kinds a gateway model may have: exactly those the proxy has adapters
 * for (services/proxy/src/upstreams/, docs/proxy.md "Upstreams"). The database's CHECK
 * constraints (migrations/0003_provider_kinds.sql, and 0020_upstream_deployments.sql for
 * deployments) hold the same list.
 */
export const providerKinds = [
  'openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together', 'anthropic',
] as const;

/** One upstream provider kind, e.g. `openai_compatible` or `anthropic`. */
export type ProviderKind = (typeof providerKinds)[number];

/** The one kind whose base URL may carry a query: Azure OpenAI's `?api-version=…`. */
export const apiVersionQueryProviderKind: ProviderKind = 'azure_openai';
