import { anthropicAdapter } from './anthropic/adapter.ts';
import { openAiCompatibleAdapters } from './openai-compatible/providers.ts';
import type { UpstreamAdapter } from './upstream-adapter.ts';

/** Every adapter the proxy has, by the `provider_kind` it serves. More kinds come with their folders. */
const adaptersByKind: ReadonlyMap<string, UpstreamAdapter> = new Map(
  [...openAiCompatibleAdapters, anthropicAdapter].map((adapter) => [adapter.providerKind, adapter]),
);

/** The adapter of a provider kind; undefined when the proxy has none. */
export function adapterFor(providerKind: string): UpstreamAdapter | undefined {
  return adaptersByKind.get(providerKind);
}

/** Whether the proxy can serve gateway models of a provider kind. */
export function supportsProviderKind(providerKind: string): boolean {
  return adaptersByKind.has(providerKind);
}

/** Every provider kind the proxy serves, sorted (for docs and logs). */
export function supportedProviderKinds(): string[] {
  return [...adaptersByKind.keys()].sort();
}
