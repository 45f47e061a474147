/** An OpenAI-compatible upstream on node:http: the demo upstream of `pnpm start` and the steerable fake of tests. */
export { startFakeUpstream, type FakeUpstream, type FakeUpstreamOptions, type RecordedRequest } from './fake-upstream.ts';
export { leakMarkers } from './wire.ts';
export { countWords, fakePromptTokens, fakeReplyText } from './conversation.ts';
export { parseDirectives, withoutDirectives, type Directives } from './directives.ts';
export type { PrefixCacheOptions, CacheTtl } from './prefix-cache.ts';
export { fakeThinkingSignature } from './reasoning.ts';
