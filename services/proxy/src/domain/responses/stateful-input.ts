import { GatewayError } from '@gateway/errors';
import type { OrganisationEntry } from '../config-snapshot.ts';
import { inputItemId, responseIdOfItemId, type StoredItem, type StoredResponseRecord } from './stored-responses.ts';

/** What a Responses request says about stored state, validated. */
export interface StatefulFields {
  /** Whether the response is to be stored: the request's `store`, true when absent (OpenAI's default). */
  store: boolean;
  previousResponseId: string | undefined;
}

function invalid(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

/** Whether an input item is a reference to a stored item: `type: "item_reference"`, or an object with only an id (no type, no role). */
export function isItemReference(item: unknown): item is { id?: unknown } {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const { type, role } = item as { type?: unknown; role?: unknown };
  return type === 'item_reference' || ((type === undefined || type === null) && role === undefined && 'id' in item);
}

/**
 * `store` and `previous_response_id` of a Responses body, validated against the organisation:
 * with storing off, `store: true` is a 400 naming `store` and `previous_response_id` a 400
 * naming it (an absent `store` is then served unstored).
 */
export function readStatefulFields(body: unknown, organisation: OrganisationEntry): StatefulFields {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { store: false, previousResponseId: undefined };
  const { store, previous_response_id: previous } = body as { store?: unknown; previous_response_id?: unknown };
  if (store !== undefined && store !== null && typeof store !== 'boolean') throw invalid('store', 'Invalid store: store must be a boolean');
  if (previous !== undefined && previous !== null && (typeof previous !== 'string' || previous.length === 0 || previous.length > 256)) {
    throw invalid('previous_response_id', 'Invalid previous_response_id: must be the id of a stored response (resp_…)');
  }
  const disabled = organisation.responseStoreDisabled === true;
  if (disabled && store === true) {
    throw invalid('store', 'Storing responses is turned off for this organisation: omit store or set it to false.');
  }
  if (disabled && typeof previous === 'string') {
    throw invalid('previous_response_id', 'Storing responses is turned off for this organisation, so a response cannot continue an earlier one; send the whole conversation in input.');
  }
  return { store: !disabled && store !== false, previousResponseId: typeof previous === 'string' ? previous : undefined };
}

/** The input with its item_references replaced by the stored items, and the earlier conversation a previous_response_id brings. */
export interface ResolvedStatefulInput {
  input: unknown;
  /** The continued response's context (its earlier turns, input and output); empty without previous_response_id. */
  priorItems: unknown[];
}

/**
 * Reads what a request refers to, before any Reserve: the response `previous_response_id` names
 * (a 400 naming it when the organisation has no such response: unknown, another organisation's,
 * deleted or expired all read the same) and the stored item of each item_reference (a 400 naming
 * `input[i]`). `load` is the organisation-scoped read (a 503 when the store is down); each
 * response is read once however many of its items are referred to.
 */
export async function resolveStatefulInput(
  input: unknown, fields: StatefulFields, load: (responseId: string) => Promise<StoredResponseRecord | undefined>,
): Promise<ResolvedStatefulInput> {
  const reads = new Map<string, Promise<StoredResponseRecord | undefined>>();
  const read = (responseId: string) => {
    let pending = reads.get(responseId);
    if (pending === undefined) {
      pending = load(responseId);
      reads.set(responseId, pending);
    }
    return pending;
  };
  const previous = fields.previousResponseId === undefined ? undefined : read(fields.previousResponseId);
  let resolved = input;
  if (Array.isArray(input) && input.some(isItemReference)) {
    resolved = await Promise.all(input.map(async (item, index) => {
      if (!isItemReference(item)) return item;
      const id = item.id;
      if (typeof id !== 'string' || id.length === 0 || id.length > 256) throw invalid(`input[${index}].id`, 'An item_reference needs the string id of a stored item.');
      const responseId = responseIdOfItemId(id);
      const record = responseId === undefined ? undefined : await read(responseId);
      const found = record === undefined ? undefined : [...record.response.output, ...record.inputItems].find((stored) => (stored as { id?: unknown }).id === id);
      if (found === undefined) throw invalid(`input[${index}]`, `Item with id '${id}' not found (never stored, deleted, expired, or not this organisation's).`);
      return found;
    }));
  }
  if (previous === undefined) return { input: resolved, priorItems: [] };
  const record = await previous;
  if (record === undefined) {
    throw invalid('previous_response_id', `Previous response with id '${fields.previousResponseId!}' not found (never stored, deleted, expired, or not this organisation's).`);
  }
  return { input: resolved, priorItems: record.context };
}

/** This request's input items as stored and listed: a string input is one user message; each item gets an id unless it has one. */
export function storedInputItems(input: unknown, itemIdBase: string): StoredItem[] {
  const items: unknown[] = typeof input === 'string' ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }] : Array.isArray(input) ? input : [];
  return items.map((item, index) => {
    const fields = item as Record<string, unknown>;
    const type = typeof fields.type === 'string' ? fields.type : 'message';
    const id = typeof fields.id === 'string' && fields.id !== '' ? fields.id : inputItemId(itemIdBase, type, index);
    return { ...fields, type, id };
  });
}
