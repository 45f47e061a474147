import { toHttpError, type GatewayError } from '@gateway/errors';
import type { StreamChoice, StreamDelta, StreamToolCallDelta } from '../normalized-completion.ts';
import type { ReasoningBlock } from '../reasoning.ts';
import { reasoningItemOf, type ReasoningItem } from './responses-reasoning.ts';
import type { StreamClose, StreamRenderer } from '../stream-renderer.ts';
import {
  incompleteReasonOf, outputItemId, responseObject, responsesUsage, toolCallItem,
  type CustomToolCallItem, type FunctionCallItem, type IncompleteReason, type OutputItem, type OutputMessageItem, type ResponseFrame, type ResponseObject,
} from './responses-response.ts';

/** The message item being written, and its open content part. */
interface OpenMessage {
  item: OutputMessageItem;
  outputIndex: number;
  /** The open part's kind and text so far; undefined between parts. */
  part: { kind: 'output_text' | 'refusal'; text: string } | undefined;
}

/** A tool call item being written (open until the stream ends), with the call as the chat stream names it. */
interface OpenCall {
  item: FunctionCallItem | CustomToolCallItem;
  outputIndex: number;
  /** The chat function name (a custom or namespaced tool's name upstream) and arguments so far. */
  chatName: string;
  chatArguments: string;
}

/** Writes one event of the stream (`event: <type>`, then its data with the next `sequence_number`). */
type EventWriter = (type: string, fields: Record<string, unknown>) => string;

/** The reasoning item being written: its frames as deltas arrive, and its done events. */
interface ReasoningItemFrames {
  /** The reasoning parts of a delta: summary text events when a summary was asked for; signatures and redacted blocks kept for the item. */
  delta(delta: StreamDelta): string;
  /** Ends the reasoning item (its summary's done events); '' when none is open. */
  close(): string;
}

/** The reasoning item of a stream, opened by its first reasoning delta and closed by the next item (or the end). */
function reasoningItemFrames(frame: ResponseFrame, output: OutputItem[], event: EventWriter): ReasoningItemFrames {
  /** The reasoning item being written: its blocks so far, and whether its summary part is open. */
  let reasoning: { item: ReasoningItem; outputIndex: number; blocks: ReasoningBlock[]; summaryOpen: boolean; text: string } | undefined;
  const reasoningOptions = frame.reasoning?.options ?? { summary: false, encrypted: false };

  /** Opens the reasoning item (when none is open); the frames that say so. */
  const openReasoning = (): string => {
    if (reasoning !== undefined) return '';
    const outputIndex = output.length;
    const item: ReasoningItem = { id: outputItemId(frame, 'reasoning', outputIndex), type: 'reasoning', summary: [] };
    output.push(item);
    reasoning = { item, outputIndex, blocks: [], summaryOpen: false, text: '' };
    return event('response.output_item.added', { output_index: outputIndex, item });
  };

  const reasoningDelta = (delta: StreamDelta): string => {
    let frames = '';
    const text = delta.reasoning_content;
    if (text !== undefined && text !== '') {
      frames += openReasoning();
      const open = reasoning!;
      const last = open.blocks.at(-1);
      // A thinking block is open until its signature arrives.
      if (last?.type === 'thinking' && last.signature === '') last.thinking += text;
      else open.blocks.push({ type: 'thinking', thinking: text, signature: '' });
      if (reasoningOptions.summary) {
        const at = { item_id: open.item.id, output_index: open.outputIndex, summary_index: 0 };
        if (!open.summaryOpen) {
          open.summaryOpen = true;
          frames += event('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } });
        }
        open.text += text;
        frames += event('response.reasoning_summary_text.delta', { ...at, delta: text });
      }
    }
    if (delta.reasoning_signature !== undefined) {
      frames += openReasoning();
      const last = reasoning!.blocks.at(-1);
      if (last?.type === 'thinking' && last.signature === '') last.signature = delta.reasoning_signature;
      else reasoning!.blocks.push({ type: 'thinking', thinking: '', signature: delta.reasoning_signature });
    }
    if (delta.redacted_reasoning !== undefined) {
      frames += openReasoning();
      reasoning!.blocks.push({ type: 'redacted_thinking', data: delta.redacted_reasoning });
    }
    return frames;
  };

  const closeReasoning = (): string => {
    if (reasoning === undefined) return '';
    const open = reasoning;
    reasoning = undefined;
    let frames = '';
    if (open.summaryOpen) {
      const at = { item_id: open.item.id, output_index: open.outputIndex, summary_index: 0 };
      frames += event('response.reasoning_summary_text.done', { ...at, text: open.text });
      frames += event('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text: open.text } });
    }
    const done = reasoningItemOf(open.item.id, open.blocks, reasoningOptions, frame.reasoning?.seal);
    output[open.outputIndex] = done;
    return frames + event('response.output_item.done', { output_index: open.outputIndex, item: done });
  };

  return { delta: reasoningDelta, close: closeReasoning };
}

/** The assistant message item being written, one content part (output text or refusal) open at a time. */
interface MessageItemFrames {
  /** Opens the message item (when none is open) and a part of `kind` in it (ending another kind's); the frames that say so. */
  openPart(kind: 'output_text' | 'refusal'): string;
  /** Text (or refusal text) for the message item, opening the item and the part as needed. */
  delta(kind: 'output_text' | 'refusal', delta: string): string;
  /** Ends the message item (its open part first); '' when none is open. */
  close(status: 'completed' | 'incomplete'): string;
  /** The output index of the open message item; undefined when none is open. */
  openIndex(): number | undefined;
}

/** The message item of a stream; opening it first ends the reasoning item (`closeReasoning`). */
function messageItemFrames(frame: ResponseFrame, output: OutputItem[], event: EventWriter, closeReasoning: () => string): MessageItemFrames {
  let message: OpenMessage | undefined;

  /** Ends the message item's open part (its done events); '' when none is open. */
  const closePart = (): string => {
    const part = message?.part;
    if (message === undefined || part === undefined) return '';
    const at = { item_id: message.item.id, output_index: message.outputIndex, content_index: message.item.content.length };
    const done = part.kind === 'output_text'
      ? { type: 'output_text' as const, text: part.text, annotations: [] as [], logprobs: [] as [] }
      : { type: 'refusal' as const, refusal: part.text };
    message.item.content.push(done);
    message.part = undefined;
    const textDone = part.kind === 'output_text'
      ? event('response.output_text.done', { ...at, text: part.text, logprobs: [] })
      : event('response.refusal.done', { ...at, refusal: part.text });
    return textDone + event('response.content_part.done', { ...at, part: done });
  };

  const closeMessage = (status: 'completed' | 'incomplete'): string => {
    if (message === undefined) return '';
    const frames = closePart();
    message.item.status = status;
    const done = event('response.output_item.done', { output_index: message.outputIndex, item: message.item });
    message = undefined;
    return frames + done;
  };

  const openPart = (kind: 'output_text' | 'refusal'): string => {
    let frames = closeReasoning();
    if (message === undefined) {
      const outputIndex = output.length;
      const item: OutputMessageItem = { id: outputItemId(frame, 'message', outputIndex), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      output.push(item);
      message = { item, outputIndex, part: undefined };
      frames += event('response.output_item.added', { output_index: outputIndex, item });
    }
    if (message.part !== undefined && message.part.kind !== kind) frames += closePart();
    if (message.part === undefined) {
      message.part = { kind, text: '' };
      const part = kind === 'output_text' ? { type: 'output_text', text: '', annotations: [], logprobs: [] } : { type: 'refusal', refusal: '' };
      frames += event('response.content_part.added', { item_id: message.item.id, output_index: message.outputIndex, content_index: message.item.content.length, part });
    }
    return frames;
  };

  const messageDelta = (kind: 'output_text' | 'refusal', delta: string): string => {
    const frames = openPart(kind);
    const open = message!;
    open.part!.text += delta;
    const at = { item_id: open.item.id, output_index: open.outputIndex, content_index: open.item.content.length };
    return frames + (kind === 'output_text'
      ? event('response.output_text.delta', { ...at, delta, logprobs: [] })
      : event('response.refusal.delta', { ...at, delta }));
  };

  return { openPart, delta: messageDelta, close: closeMessage, openIndex: () => message?.outputIndex };
}

/** The tool call items of a stream: open until the stream ends, then closed in output order. */
interface ToolCallItemFrames {
  /** One tool-call fragment: the first of a call opens its item (and ends the items before it). */
  delta(fragment: StreamToolCallDelta): string;
  /** Ends the tool call item at `outputIndex` with `status` (its arguments' or input's done events); '' when it is no open call. */
  close(outputIndex: number, status: 'completed' | 'incomplete'): string;
}

/** The tool call items of a stream; opening the first ends the reasoning and message items (`closeItemsBefore`). */
function toolCallItemFrames(frame: ResponseFrame, output: OutputItem[], event: EventWriter, closeItemsBefore: () => string): ToolCallItemFrames {
  /** Open tool call items by the chat stream's tool-call index. */
  const calls = new Map<number, OpenCall>();

  const toolCallDelta = (fragment: StreamToolCallDelta): string => {
    let frames = '';
    let call = calls.get(fragment.index);
    if (call === undefined) {
      frames += closeItemsBefore();
      const outputIndex = output.length;
      const chatName = fragment.function?.name ?? '';
      // A custom or namespaced tool's call reads as the client declared it (responses-tools.ts); its kind is known from the first fragment's name.
      const item = toolCallItem(frame, { id: fragment.id ?? '', function: { name: chatName, arguments: '' } }, outputIndex, 'in_progress');
      output.push(item);
      call = { item, outputIndex, chatName, chatArguments: '' };
      calls.set(fragment.index, call);
      frames += event('response.output_item.added', { output_index: outputIndex, item });
    } else if (fragment.function?.name !== undefined) {
      call.chatName += fragment.function.name;
      if (call.item.type === 'function_call') call.item.name += fragment.function.name;
    }
    const delta = fragment.function?.arguments;
    if (delta !== undefined && delta !== '') {
      call.chatArguments += delta;
      // A custom call's input is the text inside its JSON arguments, known whole only at the end: it is sent then, as one delta.
      if (call.item.type === 'function_call') {
        call.item.arguments += delta;
        frames += event('response.function_call_arguments.delta', { item_id: call.item.id, output_index: call.outputIndex, delta });
      }
    }
    return frames;
  };

  const closeCall = (outputIndex: number, status: 'completed' | 'incomplete'): string => {
    const item = output[outputIndex]!;
    if ((item.type !== 'function_call' && item.type !== 'custom_tool_call') || item.status !== 'in_progress') return '';
    item.status = status;
    let frames = '';
    if (item.type === 'custom_tool_call') {
      const open = [...calls.values()].find((candidate) => candidate.outputIndex === outputIndex)!;
      const done = toolCallItem(frame, { id: item.call_id, function: { name: open.chatName, arguments: open.chatArguments } }, outputIndex, item.status);
      item.input = done.type === 'custom_tool_call' ? done.input : open.chatArguments;
      const at = { item_id: item.id, output_index: outputIndex };
      if (item.input !== '') frames += event('response.custom_tool_call_input.delta', { ...at, delta: item.input });
      frames += event('response.custom_tool_call_input.done', { ...at, input: item.input });
    } else {
      frames += event('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, arguments: item.arguments });
    }
    return frames + event('response.output_item.done', { output_index: outputIndex, item });
  };

  return { delta: toolCallDelta, close: closeCall };
}

/**
 * The Responses surface's stream (OpenAI's ResponseStreamEvent, `event: <type>` then `data:
 * <json>` per frame, each with its `sequence_number` from 0): `response.created` and
 * `response.in_progress` first; then per output item `response.output_item.added`, for a message
 * `response.content_part.added`, `response.output_text.delta` (or `response.refusal.delta`) …,
 * `.done` events, `response.content_part.done`; for a tool call `function_call_arguments.delta` …
 * `.done` (a custom tool's call: its input as one `custom_tool_call_input.delta` and `.done` when
 * the stream ends, since it is the text inside the upstream's JSON arguments); each item ends with `response.output_item.done`. The last event carries the whole
 * response with its usage and cost: `response.completed`, or `response.incomplete` (reason
 * `max_output_tokens` for the gateway's cost stop (BOUNDED_OVERRUN) or the upstream's `length`,
 * `content_filter` likewise). An error after the stream opened is one `error` event, then the end.
 * A message item closes when a tool call starts; tool call items stay open until the end (so a
 * call's fragments arriving out of order still land in their item), then close in output order.
 * `onDone` gets the final Response object (completed or incomplete) as the stream ends.
 */
export function createResponsesStreamRenderer(frame: ResponseFrame, onDone?: (response: ResponseObject) => void): StreamRenderer {
  let sequence = 0;
  const output: OutputItem[] = [];
  let finishReason: string | null = null;

  const event: EventWriter = (type, fields) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`;

  const lifecycle = (type: string, response: ResponseObject): string => event(type, { response });

  const reasoning = reasoningItemFrames(frame, output, event);
  const message = messageItemFrames(frame, output, event, () => reasoning.close());
  const calls = toolCallItemFrames(frame, output, event, () => reasoning.close() + message.close('completed'));

  const chunk = (choices: StreamChoice[]): string => {
    let frames = '';
    for (const choice of choices) {
      // One answer per request (n = 1): a choice of another index would be a second response.
      if (choice.index !== 0) continue;
      const { content, refusal, tool_calls: toolCalls } = choice.delta;
      frames += reasoning.delta(choice.delta);
      if (content !== undefined && content !== '') frames += message.delta('output_text', content);
      if (refusal !== undefined && refusal !== '') frames += message.delta('refusal', refusal);
      for (const fragment of toolCalls ?? []) frames += calls.delta(fragment);
      if (choice.finish_reason !== null) finishReason = choice.finish_reason;
    }
    return frames;
  };

  return {
    start() {
      const response = responseObject(frame, { status: 'in_progress', output: [], usage: null, completedAtS: null });
      return lifecycle('response.created', response) + lifecycle('response.in_progress', response);
    },
    chunk,
    text: (text: string) => (text === '' ? '' : message.delta('output_text', text)),
    close(close: StreamClose): string {
      const incompleteReason: IncompleteReason | undefined = close.ending === 'cost_stop' ? 'max_output_tokens' : incompleteReasonOf(finishReason);
      // An answer with nothing in it still has its (empty) message, as the non-streaming body does.
      let frames = reasoning.close();
      if (output.every((item) => item.type === 'reasoning')) frames += message.openPart('output_text');
      // The item written last is the one the cut (if any) fell in.
      const lastIndex = output.length - 1;
      const statusAt = (outputIndex: number) => (incompleteReason !== undefined && outputIndex === lastIndex ? 'incomplete' : 'completed');
      // The items still open end in output order (a message after tool calls ends after them).
      const openMessageIndex = message.openIndex();
      for (let outputIndex = 0; outputIndex < output.length; outputIndex += 1) {
        if (outputIndex === openMessageIndex) {
          frames += message.close(statusAt(outputIndex));
          continue;
        }
        frames += calls.close(outputIndex, statusAt(outputIndex));
      }
      const response = responseObject(frame, {
        status: incompleteReason === undefined ? 'completed' : 'incomplete', incompleteReason, output,
        usage: responsesUsage(close.usage, close.costMicros, close.costByClass), completedAtS: Math.floor(Date.now() / 1000),
      });
      // Handed over before its frames are written, so a stored response is kept before the client reads its end.
      onDone?.(response);
      return frames + lifecycle(incompleteReason === undefined ? 'response.completed' : 'response.incomplete', response);
    },
    fail(error: GatewayError): string {
      const { message: text, code, param } = toHttpError(error).body.error;
      return event('error', { code, message: text, param });
    },
  };
}
