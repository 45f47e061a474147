import { toolCallIdCodecForKey } from '../domain/tool-call-id-codec.ts';
import type { ToolCallIdCodec } from '../domain/tool-call-ids.ts';

/** A codec that maps nothing: for tests of code that has no tool calls in it, or of rules that hold whatever the ids are. */
export const unmappedToolCallIds: ToolCallIdCodec = {
  conceal: (upstreamId) => upstreamId,
  reveal: (clientId) => clientId,
};

/** The codec production builds for a snapshot's key (32 bytes), through the same function (toolCallIdCodecForKey). */
export function createToolCallIdCodec(key: Uint8Array): ToolCallIdCodec {
  return toolCallIdCodecForKey(() => undefined)(key);
}
