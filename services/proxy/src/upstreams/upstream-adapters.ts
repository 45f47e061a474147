import { openAiCompatibleAdapter } from './openai-compatible/adapter.ts';
import type { UpstreamAdapter } from './upstream-adapter.ts';

/** Every adapter the proxy has, by the `provider_kind` it serves. More kinds come with their folders. */
const adaptersByKind: ReadonlyMap<string, UpstreamAdapter> = new Map(
  [openAiCompatibleAdapter].map((adapter) => [adapter.providerKind, adapter]),
);

/** The adapter of a provider kind; undefined when the proxy has none. */
export function adapterFor(providerKind: string): UpstreamAdapter | undefined {
  return adaptersByKind.get(providerKind);
}

/** Whether the proxy can serve gateway models of a provider kind. */
export function supportsProviderKind(providerKind: string): boolean {
  return adaptersByKind.has(providerKind);
}
