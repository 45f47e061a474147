/** The proxy (data plane): the OpenAI-compatible /v1 API over the admin's config snapshot and the ledger. */
export { createProxyApp, type ProxyApp, type ProxyAppDeps } from './app.ts';
export { loadProxyConfig, proxyConfigSchema, proxyDrainBoundMs, proxyRequestBoundMs, proxyShutdownGraceMs, type ProxyConfig } from './config.ts';
export { countTextTokens, tokenizerForModel } from './domain/token-estimate.ts';
export type { TokenizerName } from './domain/config-snapshot.ts';
export { supportedProviderKinds } from './upstreams/upstream-adapters.ts';
