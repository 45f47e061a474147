import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { paramOf } from '../chat-request.ts';

/**
 * The Responses surface's tools beyond plain functions, as agents send them (Codex CLI): custom
 * (freeform) tools and namespace tools, translated into the chat form's function tools so every
 * upstream kind can serve them, and the upstream's calls mapped back to the items the client
 * declared (`custom_tool_call`, a `function_call` with its `namespace`). Hosted tools, which run on
 * OpenAI's side, are refused naming the field (docs/surfaces/responses.md, "Codex CLI").
 */

/** What a chat function name stands for when it is not a plain top-level function of the same name. */
interface MappedTool {
  /** `custom`: a freeform tool whose one string argument is `input`; `function`: a function of a namespace. */
  kind: 'function' | 'custom';
  /** The tool's own name, as the client declared it. */
  name: string;
  /** The namespace the tool was declared in; absent for a top-level custom tool. */
  namespace?: string;
}

/** The chat function names of one request that stand for custom or namespaced tools; plain functions are not in it. */
export type ResponsesToolNames = ReadonlyMap<string, MappedTool>;

/** A tool as a Response object echoes it (as the client declared it). */
export type EchoedTool =
  | { type: 'function'; name: string; description: string | null; parameters: Record<string, unknown> | null; strict: boolean | null }
  | { type: 'custom'; name: string; description: string | null; format: CustomToolFormat }
  | { type: 'namespace'; name: string; description: string; tools: EchoedTool[] };

/** A custom tool's input format: free text, or text a grammar (Lark or a regular expression) accepts. */
type CustomToolFormat = { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };

/** The one argument a custom tool becomes: its free text, which the call's item carries back as `input`. */
const customInputSchema = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The tool\'s whole input, as free text (not JSON-encoded).' } },
  required: ['input'],
  additionalProperties: false,
} as const;

/** A namespace's function is `<namespace>__<name>` upstream (Codex's own spelling for MCP tools); names the upstreams take are 1..64 of A-Za-z0-9_-. */
const namespaceSeparator = '__';
const upstreamToolName = /^[A-Za-z0-9_-]{1,64}$/;

const functionToolSchema = z.object({
  type: z.literal('function'),
  name: z.string({ error: 'a function tool needs a string name' }).min(1, 'name must not be empty').max(64, 'name is at most 64 characters'),
  description: z.string({ error: 'description must be a string' }).nullish(),
  parameters: z.record(z.string(), z.unknown(), { error: 'parameters must be a JSON Schema object' }).nullish(),
  strict: z.boolean({ error: 'strict must be a boolean' }).nullish(),
  // A deferred tool is hidden until tool search finds it; tool search is not served, so no tool can be deferred.
  defer_loading: z.literal(false, { error: 'deferred tools need tool search, which this gateway does not serve; omit defer_loading' }).optional(),
});

const customToolSchema = z.object({
  type: z.literal('custom'),
  name: z.string({ error: 'a custom tool needs a string name' }).regex(upstreamToolName, 'name is 1 to 64 of a-z, A-Z, 0-9, _ and -'),
  description: z.string({ error: 'description must be a string' }).nullish(),
  format: z.discriminatedUnion('type', [
    z.object({ type: z.literal('text') }),
    z.object({
      type: z.literal('grammar'),
      syntax: z.enum(['lark', 'regex'], { error: 'syntax must be lark or regex' }),
      definition: z.string({ error: 'a grammar needs its definition as a string' }).min(1, 'definition must not be empty').max(100_000, 'definition is at most 100000 characters'),
    }),
  ], { error: 'format must be {type: "text"} or {type: "grammar", syntax, definition}' }).nullish(),
  defer_loading: z.literal(false, { error: 'deferred tools need tool search, which this gateway does not serve; omit defer_loading' }).optional(),
});

const namespaceToolSchema = z.object({
  type: z.literal('namespace'),
  name: z.string({ error: 'a namespace needs a string name' }).regex(/^[A-Za-z0-9_-]{1,62}$/, 'name is 1 to 62 of a-z, A-Z, 0-9, _ and -'),
  description: z.string({ error: 'a namespace needs a string description' }),
  tools: z.array(z.unknown(), { error: 'tools must be an array of function or custom tools' }).min(1, 'a namespace needs at least one tool'),
});

function invalid(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

/** Parses a value with a schema; the first issue is a 400 naming its path under `at`. */
function parseAt<T>(schema: z.ZodType<T>, value: unknown, at: ReadonlyArray<string | number>): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramOf([...at, ...issue.path]) ?? paramOf(at)!;
  throw invalid(param, `Invalid ${param}: ${issue.message}`);
}

/** Why a hosted tool type is refused: it runs on OpenAI's side, and no upstream of the gateway runs it. */
function hostedToolRefusal(type: unknown): string {
  const named = typeof type === 'string' ? ` (${type.slice(0, 64)})` : '';
  return `Only function, custom (free text) and namespace tools are served by this gateway; hosted tools${named} run on OpenAI's side and no upstream of this gateway runs them. `
    + 'With Codex CLI, set web_search = "disabled" in config.toml.';
}

/** The chat name a namespace's tool has upstream. */
export function namespacedName(namespace: string, name: string): string {
  return `${namespace}${namespaceSeparator}${name}`;
}

/**
 * A custom tool's description upstream. A grammar cannot be enforced on a chat upstream's decoding,
 * so the model is given it as part of the description instead of losing it: it writes input the
 * grammar accepts as it writes JSON a schema describes, and the client checks what it gets (Codex
 * reports a patch that does not apply back to the model). docs/decisions.md, "Codex CLI's tools".
 */
function customDescription(description: string | null | undefined, format: CustomToolFormat): string | undefined {
  if (format.type === 'text') return description ?? undefined;
  const grammar = `The input is plain text (not JSON) that this ${format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'} accepts:\n${format.definition}`;
  return description == null || description === '' ? grammar : `${description}\n\n${grammar}`;
}

/**
 * A namespace's tool's description upstream: the namespace's description first (the model reads it
 * with the namespace's tools on OpenAI's side, and chat has no namespace to put it on), then its own.
 */
function inNamespace(space: { name: string; description: string } | undefined, description: string | null | undefined): string | null | undefined {
  if (space === undefined || space.description === '') return description;
  const context = `(${space.name}: ${space.description})`;
  return description == null || description === '' ? context : `${context}\n\n${description}`;
}

/** A chat function tool. */
function chatFunction(name: string, description: string | null | undefined, parameters: unknown, strict?: boolean | null): unknown {
  const fn: Record<string, unknown> = { name };
  if (description != null) fn.description = description;
  if (parameters != null) fn.parameters = parameters;
  if (strict != null) fn.strict = strict;
  return { type: 'function', function: fn };
}

/**
 * The Responses `tools` as chat function tools, as the response echoes them, and the names that
 * stand for custom or namespaced tools. A custom tool becomes a function of one string `input`; a
 * namespace's functions and custom tools become functions named `<namespace>__<name>`, the
 * namespace's description before each one's own. Two tools
 * of one chat name, a name the upstreams would refuse, a grammar format and any hosted tool are a
 * 400 naming the field.
 */
export function translateResponsesTools(tools: readonly unknown[]): { chat: unknown[]; echoed: EchoedTool[]; names: ResponsesToolNames } {
  const chat: unknown[] = [];
  const echoed: EchoedTool[] = [];
  const names = new Map<string, MappedTool>();
  const seen = new Set<string>();
  const plain: Array<[string, ReadonlyArray<string | number>]> = [];
  /** Checks a custom or namespaced tool's chat name (plain functions reach the upstream as named, as before). */
  const claim = (chatName: string, at: ReadonlyArray<string | number>) => {
    const param = `${paramOf(at)!}.name`;
    if (!upstreamToolName.test(chatName)) throw invalid(param, `Invalid ${param}: the tool's name upstream, ${chatName.slice(0, 80)}, must be 1 to 64 of a-z, A-Z, 0-9, _ and -.`);
    if (seen.has(chatName)) throw invalid(param, `Invalid ${param}: two tools are named ${chatName.slice(0, 80)} (a namespace's tools are named <namespace>__<name>).`);
    seen.add(chatName);
  };
  /** One function or custom tool, top-level or inside a namespace. */
  const one = (tool: unknown, at: ReadonlyArray<string | number>, space: { name: string; description: string } | undefined): EchoedTool => {
    const namespace = space?.name;
    const type = typeof tool === 'object' && tool !== null ? (tool as { type?: unknown }).type : undefined;
    if (type === 'function') {
      const parsed = parseAt(functionToolSchema, tool, at);
      const chatName = namespace === undefined ? parsed.name : namespacedName(namespace, parsed.name);
      if (namespace !== undefined) {
        claim(chatName, at);
        names.set(chatName, { kind: 'function', name: parsed.name, namespace });
      } else {
        plain.push([chatName, at]);
      }
      chat.push(chatFunction(chatName, inNamespace(space, parsed.description), parsed.parameters, parsed.strict));
      return { type: 'function', name: parsed.name, description: parsed.description ?? null, parameters: parsed.parameters ?? null, strict: parsed.strict ?? null };
    }
    if (type === 'custom') {
      const parsed = parseAt(customToolSchema, tool, at);
      const chatName = namespace === undefined ? parsed.name : namespacedName(namespace, parsed.name);
      claim(chatName, at);
      names.set(chatName, { kind: 'custom', name: parsed.name, ...(namespace === undefined ? {} : { namespace }) });
      const format: CustomToolFormat = parsed.format ?? { type: 'text' };
      chat.push(chatFunction(chatName, inNamespace(space, customDescription(parsed.description, format)), customInputSchema));
      return { type: 'custom', name: parsed.name, description: parsed.description ?? null, format };
    }
    if (namespace !== undefined) throw invalid(`${paramOf(at)!}.type`, 'A namespace holds function and custom tools only.');
    throw invalid(`${paramOf(at)!}.type`, hostedToolRefusal(type));
  };
  tools.forEach((tool, index) => {
    const type = typeof tool === 'object' && tool !== null ? (tool as { type?: unknown }).type : undefined;
    if (type !== 'namespace') {
      echoed.push(one(tool, ['tools', index], undefined));
      return;
    }
    const parsed = parseAt(namespaceToolSchema, tool, ['tools', index]);
    const inner = parsed.tools.map((member, memberIndex) => one(member, ['tools', index, 'tools', memberIndex], parsed));
    echoed.push({ type: 'namespace', name: parsed.name, description: parsed.description, tools: inner });
  });
  // A plain function may not take the name a custom or namespaced tool has upstream: its calls would be mapped back as that tool's.
  for (const [chatName, at] of plain) {
    if (names.has(chatName)) throw invalid(`${paramOf(at)!}.name`, `Invalid ${paramOf(at)!}.name: another tool is named ${chatName.slice(0, 80)} upstream (a namespace's tools are named <namespace>__<name>).`);
  }
  if (chat.length > 128) throw invalid('tools', `At most 128 tools are allowed, namespaces' tools counted one by one; this request has ${chat.length}.`);
  return { chat, echoed, names };
}

const customToolCallItemSchema = z.object({
  type: z.literal('custom_tool_call'),
  call_id: z.string({ error: 'a custom_tool_call needs a string call_id' }).min(1, 'call_id must not be empty').max(256),
  name: z.string({ error: 'a custom_tool_call needs a string name' }).min(1, 'name must not be empty').max(64),
  namespace: z.string({ error: 'namespace must be a string' }).min(1).max(62).nullish(),
  input: z.string({ error: 'a custom_tool_call needs its input as a string' }),
});

/**
 * A `custom_tool_call` input item (a freeform call the model made earlier) as the chat form's tool
 * call: the function it was translated to, with its input as the one `input` argument.
 */
export function customToolCallOfItem(item: unknown, at: ReadonlyArray<string | number>): { id: string; type: 'function'; function: { name: string; arguments: string } } {
  const call = parseAt(customToolCallItemSchema, item, at);
  const name = call.namespace == null ? call.name : namespacedName(call.namespace, call.name);
  return { id: call.call_id, type: 'function', function: { name, arguments: JSON.stringify({ input: call.input }) } };
}

/** A tool call of the chat form as the Responses item the client declared it as: its kind, name, namespace, and a custom call's input. */
export type ResponsesToolCall =
  | { type: 'function_call'; name: string; namespace?: string; arguments: string }
  | { type: 'custom_tool_call'; name: string; namespace?: string; input: string };

/**
 * How a chat tool call reads on the Responses surface: a plain function as is; a namespace's
 * function under its own name with `namespace`; a custom tool's call with its `input` (the one
 * string argument; arguments that are not `{"input": "<text>"}`, such as a call cut at the
 * Reserve, are passed as they came, so nothing the model wrote is lost).
 */
export function responsesToolCall(names: ResponsesToolNames, chatName: string, chatArguments: string): ResponsesToolCall {
  const mapped = names.get(chatName);
  if (mapped === undefined) return { type: 'function_call', name: chatName, arguments: chatArguments };
  const namespace = mapped.namespace === undefined ? {} : { namespace: mapped.namespace };
  if (mapped.kind === 'function') return { type: 'function_call', name: mapped.name, ...namespace, arguments: chatArguments };
  return { type: 'custom_tool_call', name: mapped.name, ...namespace, input: customInputOf(chatArguments) };
}

/** A custom call's free text from its chat arguments `{"input": "<text>"}`; the arguments as they came when they are not that. */
function customInputOf(chatArguments: string): string {
  try {
    const parsed: unknown = JSON.parse(chatArguments);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { input?: unknown }).input === 'string') return (parsed as { input: string }).input;
  } catch {
    // Not JSON (a call cut short): the text as it came.
  }
  return chatArguments;
}
