import type { NormalizedCompletion } from '../normalized-completion.ts';
import { reasoningTokensOf } from '../completion-response.ts';
import { usageCostFields, type ClassUsage, type TokenUsage, type UsageCostFields } from '../pricing.ts';
import type { ReasoningSeal } from '../reasoning-seal.ts';
import { reasoningItemOf, type ReasoningItem, type ReasoningOutputOptions } from './responses-reasoning.ts';
import type { ResponsesEchoedFields } from './responses-request.ts';
import { responsesToolCall, type ResponsesToolNames } from './responses-tools.ts';

/** An `output_text` content part (no annotations: the gateway runs no built-in tools that would cite). */
interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: [];
  logprobs: [];
}

/** A `refusal` content part. */
interface RefusalPart {
  type: 'refusal';
  refusal: string;
}

/** A content part of an output message. */
type OutputContentPart = OutputTextPart | RefusalPart;

/** Status of an output item: in_progress while it streams, then completed, or incomplete when the answer was cut. */
type OutputItemStatus = 'in_progress' | 'completed' | 'incomplete';

/** The assistant's text answer, as an output item. */
export interface OutputMessageItem {
  id: string;
  type: 'message';
  status: OutputItemStatus;
  role: 'assistant';
  content: OutputContentPart[];
}

/** A call of a function tool, as an output item; `call_id` is the gateway's tool-call id (domain/tool-call-ids.ts). */
export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: OutputItemStatus;
  call_id: string;
  name: string;
  /** The namespace of a namespace tool's function (its chat name was `<namespace>__<name>`); absent otherwise. */
  namespace?: string;
  arguments: string;
}

/** A call of a custom (freeform) tool, as an output item: its free-text `input` (responses-tools.ts). */
export interface CustomToolCallItem {
  id: string;
  type: 'custom_tool_call';
  status: OutputItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
}

/** An item of a Response's `output`. */
export type OutputItem = ReasoningItem | OutputMessageItem | FunctionCallItem | CustomToolCallItem;

/** Why a response is incomplete: its output was cut at max_output_tokens (or at the Reserve), or by a content filter. */
export type IncompleteReason = 'max_output_tokens' | 'content_filter';

/** A Response's `usage`: OpenAI's token counts plus the request's cost (what the Settle debits or records). */
type ResponsesUsage = {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
} & UsageCostFields;

/** A Response object, exactly as clients receive it (a whole body, or the `response` of a stream's lifecycle events). */
export interface ResponseObject extends ResponsesEchoedFields {
  id: string;
  object: 'response';
  /** Unix seconds. */
  created_at: number;
  status: 'in_progress' | 'completed' | 'incomplete';
  /** Unix seconds; null until the response is done. */
  completed_at: number | null;
  error: null;
  incomplete_details: { reason: IncompleteReason } | null;
  /** The Gateway Model slug. */
  model: string;
  output: OutputItem[];
  usage: ResponsesUsage | null;
}

/** What every Response object of one request shares: the gateway's ids and clock, the slug and the request's echoed fields. */
export interface ResponseFrame {
  /** `resp_<request uuid>`. */
  id: string;
  /** Unix seconds. */
  createdAtS: number;
  modelSlug: string;
  /** The request uuid without dashes: the output items' ids are derived from it. */
  itemIdBase: string;
  echoed: ResponsesEchoedFields;
  /** The chat function names that stand for custom or namespaced tools (an empty map when there are none). */
  toolNames: ResponsesToolNames;
  /** What the request asked to be shown of the model's reasoning, and the seal of its encrypted content. */
  reasoning?: { options: ReasoningOutputOptions; seal: ReasoningSeal | undefined };
}

/** The frame of a request's Response objects: its id `resp_<uuid>`, and item ids from the same uuid (never an upstream's). */
export function responseFrame(input: {
  requestUuid: string; createdAtS: number; modelSlug: string; echoed: ResponsesEchoedFields; toolNames?: ResponsesToolNames; reasoning?: ResponseFrame['reasoning'];
}): ResponseFrame {
  return {
    id: `resp_${input.requestUuid}`, createdAtS: input.createdAtS, modelSlug: input.modelSlug,
    itemIdBase: input.requestUuid.replaceAll('-', ''), echoed: input.echoed, toolNames: input.toolNames ?? new Map(),
    ...(input.reasoning === undefined ? {} : { reasoning: input.reasoning }),
  };
}

const itemIdPrefixes = { message: 'msg', function_call: 'fc', custom_tool_call: 'ctc', reasoning: 'rs' } as const;

/** The id of the output item at `outputIndex`: `msg_…` a message, `fc_…` a function call, `ctc_…` a custom tool call, `rs_…` reasoning, from the request uuid. */
export function outputItemId(frame: ResponseFrame, kind: keyof typeof itemIdPrefixes, outputIndex: number): string {
  return `${itemIdPrefixes[kind]}_${frame.itemIdBase}_${outputIndex}`;
}

/** The output item of a (gateway-id) chat tool call: a function_call, or what a custom or namespaced tool's call reads as. */
export function toolCallItem(frame: ResponseFrame, call: { id: string; function: { name: string; arguments: string } }, outputIndex: number, status: OutputItemStatus): FunctionCallItem | CustomToolCallItem {
  const mapped = responsesToolCall(frame.toolNames, call.function.name, call.function.arguments);
  return { id: outputItemId(frame, mapped.type, outputIndex), status, call_id: call.id, ...mapped };
}

/** A Response's `usage` for a billed usage and its cost, µ₹ (the Settle's figure, usageCostMicros). */
export function responsesUsage(usage: TokenUsage, costMicros: bigint, byClass?: readonly ClassUsage[]): ResponsesUsage {
  return {
    input_tokens: usage.promptTokens,
    // Tokens the upstream's prompt cache served, a part of input_tokens (Anthropic cache writes stay plain input here).
    input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokensOf(usage) },
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...usageCostFields(costMicros, byClass),
  };
}

/** Why a response with this chat finish reason is incomplete; undefined when it completed. */
export function incompleteReasonOf(finishReason: string | null): IncompleteReason | undefined {
  if (finishReason === 'length') return 'max_output_tokens';
  if (finishReason === 'content_filter') return 'content_filter';
  return undefined;
}

/** A Response object of a frame in some state: the lifecycle events' `response` and the non-streaming body share it. */
export function responseObject(frame: ResponseFrame, state: {
  status: ResponseObject['status'];
  incompleteReason?: IncompleteReason | undefined;
  output: OutputItem[];
  usage: ResponsesUsage | null;
  completedAtS: number | null;
}): ResponseObject {
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAtS,
    status: state.status,
    completed_at: state.completedAtS,
    error: null,
    incomplete_details: state.incompleteReason === undefined ? null : { reason: state.incompleteReason },
    model: frame.modelSlug,
    output: state.output,
    usage: state.usage,
    ...frame.echoed,
  };
}

/**
 * The body of a non-streaming response from a delivered completion (its tool-call ids already
 * the gateway's): a `message` item with the text (and a refusal part when there is one; an empty
 * text when the model said nothing and called nothing), then one `function_call` item per tool
 * call. A `length` finish (the upstream's max_output_tokens, or the cut at the Reserve) makes it
 * `incomplete` with reason `max_output_tokens`; `content_filter` likewise. `usage` is what the
 * Settle bills, with its cost.
 */
export function buildResponseBody(frame: ResponseFrame, completed: {
  completion: NormalizedCompletion;
  usage: TokenUsage;
  costMicros: bigint;
  /** The cost by token class, when the usage has classes (pricing.ts costByClass). */
  costByClass?: readonly ClassUsage[] | undefined;
  /** When the answer was made, Unix seconds. */
  createdS: number;
}): ResponseObject {
  const choice = completed.completion.choices[0];
  const incompleteReason = incompleteReasonOf(choice?.finishReason ?? null);
  const itemStatus: OutputItemStatus = incompleteReason === undefined ? 'completed' : 'incomplete';
  const output: OutputItem[] = [];
  // The model's reasoning first, as OpenAI answers (its signatures already sealed for the client).
  if (choice?.reasoning !== undefined && choice.reasoning.length > 0) {
    const options = frame.reasoning?.options ?? { summary: false, encrypted: false };
    output.push(reasoningItemOf(outputItemId(frame, 'reasoning', 0), choice.reasoning, options, frame.reasoning?.seal));
  }
  const content: OutputContentPart[] = [];
  if (choice?.content != null && choice.content !== '') content.push({ type: 'output_text', text: choice.content, annotations: [], logprobs: [] });
  if (choice?.refusal != null) content.push({ type: 'refusal', refusal: choice.refusal });
  const toolCalls = choice?.toolCalls ?? [];
  if (content.length === 0 && toolCalls.length === 0) content.push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
  if (content.length > 0) {
    output.push({ id: outputItemId(frame, 'message', output.length), type: 'message', status: itemStatus, role: 'assistant', content });
  }
  for (const call of toolCalls) output.push(toolCallItem(frame, call, output.length, 'completed'));
  return responseObject(frame, {
    status: incompleteReason === undefined ? 'completed' : 'incomplete', incompleteReason, output,
    usage: responsesUsage(completed.usage, completed.costMicros, completed.costByClass), completedAtS: completed.createdS,
  });
}
