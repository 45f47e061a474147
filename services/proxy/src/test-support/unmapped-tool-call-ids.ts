import type { ToolCallIdCodec } from '../domain/tool-call-ids.ts';

/** A codec that maps nothing: for tests of code that has no tool calls in it, or of rules that hold whatever the ids are. */
export const unmappedToolCallIds: ToolCallIdCodec = {
  conceal: (upstreamId) => upstreamId,
  reveal: (clientId) => clientId,
};
