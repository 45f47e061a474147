import { GatewayError } from '@gateway/errors';
import type { ConfigSnapshot, OrganisationEntry } from '../config-snapshot.ts';
import type { ResponseSealer } from './response-sealer.ts';
import type { ResponseStore } from './response-store.ts';

/** The retention of stored Responses when the admin sent none (an older admin), seconds: OpenAI's 30 days. */
const defaultResponseRetentionS = 30 * 24 * 60 * 60;

/** An item as stored and listed: a Responses item (input or output) with its id; its other fields are kept as they were. */
export type StoredItem = Record<string, unknown> & { id: string; type: string };

/** One stored Response (sealed at rest): what GET returns, what input_items lists, what a continuation starts from. */
export interface StoredResponseRecord {
  /** When it was stored, ms since the Unix epoch (a shortened retention applies to records already stored). */
  storedAtMs: number;
  /** The Response object exactly as the client received it (`model` is the slug; nothing upstream). */
  response: Record<string, unknown> & { id: string; output: unknown[] };
  /** This request's input items, item_references resolved, each with an id. */
  inputItems: StoredItem[];
  /**
   * The conversation a request with `previous_response_id` = this one continues: the earlier
   * context, this input, then this output (instructions are not carried over, as OpenAI's are not).
   */
  context: unknown[];
}

/** How long an organisation's Responses are kept, seconds: the platform's retention, or the organisation's when shorter. */
function retentionSOf(snapshot: ConfigSnapshot, organisation: OrganisationEntry): number {
  const platform = snapshot.responseRetentionS ?? defaultResponseRetentionS;
  return organisation.responseRetentionS === undefined ? platform : Math.min(platform, organisation.responseRetentionS);
}

const responseIdPattern = /^resp_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Item ids the gateway gives are `<kind>_<32 hex of the response's uuid>_<position>`. */
const itemIdPattern = /^[a-z]+_([0-9a-f]{32})_i?\d+$/;

/** Whether a string is shaped like a response id this gateway gives (`resp_<uuid>`); others are answered 404 without a read. */
function isResponseId(id: string): boolean {
  return responseIdPattern.test(id);
}

/** The id of the response an item id of this gateway belongs to; undefined for any other id. */
export function responseIdOfItemId(itemId: string): string | undefined {
  const hex = itemIdPattern.exec(itemId)?.[1];
  if (hex === undefined) return undefined;
  return `resp_${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The id of input item `index` of a response whose item ids derive from `itemIdBase`: `msg_…_i0`, `fc_…_i1`, `fco_…_i2`. */
export function inputItemId(itemIdBase: string, type: string, index: number): string {
  const kind = type === 'message' ? 'msg' : type === 'function_call' ? 'fc' : type === 'function_call_output' ? 'fco' : 'item';
  return `${kind}_${itemIdBase}_i${index}`;
}

/** The store failed to answer: a 503 before any Reserve (nothing is billed for a request it stopped). */
function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError('service_unavailable', {
    publicMessage: 'Stored responses cannot be read right now; retry shortly, or send the whole conversation as input with store: false.',
    internalMessage: `response store: ${(cause as Error)?.message ?? String(cause)}`,
    cause,
  });
}

/**
 * The organisation-scoped view of the response store: records are sealed per organisation
 * (response-sealer.ts) and kept under the organisation's id, so an id of another organisation
 * reads as absent, the same as an unknown one. A record past the organisation's current retention
 * (shortened after it was stored) also reads as absent and is deleted.
 */
export class StoredResponses {
  readonly #store: ResponseStore;
  readonly #sealerOf: (snapshot: ConfigSnapshot) => ResponseSealer;
  readonly #now: () => number;

  /** `sealerOf`: the sealer of a snapshot's key; `now`: the clock, ms. */
  constructor(options: { store: ResponseStore; sealerOf: (snapshot: ConfigSnapshot) => ResponseSealer; now?: () => number }) {
    this.#store = options.store;
    this.#sealerOf = options.sealerOf;
    this.#now = options.now ?? Date.now;
  }

  /** Seals and stores a record for the organisation's retention; rejects when the store fails (the caller logs it and says "not stored"). */
  async save(snapshot: ConfigSnapshot, organisation: OrganisationEntry, record: StoredResponseRecord): Promise<void> {
    const responseId = record.response.id;
    const sealed = this.#sealerOf(snapshot).seal(organisation.id, responseId, Buffer.from(JSON.stringify(record), 'utf8'));
    await this.#store.put({ organisationId: organisation.id, responseId }, sealed, retentionSOf(snapshot, organisation) * 1000);
  }

  /** The organisation's record of a response, or undefined (unknown, another organisation's, deleted or expired); a 503 when the store fails. */
  async load(snapshot: ConfigSnapshot, organisation: OrganisationEntry, responseId: string): Promise<StoredResponseRecord | undefined> {
    if (!isResponseId(responseId)) return undefined;
    const key = { organisationId: organisation.id, responseId };
    let sealed: Buffer | undefined;
    try {
      sealed = await this.#store.get(key);
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (sealed === undefined) return undefined;
    const plaintext = this.#sealerOf(snapshot).open(organisation.id, responseId, sealed);
    if (plaintext === undefined) return undefined;
    const record = JSON.parse(plaintext.toString('utf8')) as StoredResponseRecord;
    if (record.storedAtMs + retentionSOf(snapshot, organisation) * 1000 <= this.#now()) {
      await this.#store.delete(key).catch(() => undefined);
      return undefined;
    }
    return record;
  }

  /** Deletes the organisation's record of a response; false when it had none. A 503 when the store fails. */
  async remove(organisation: OrganisationEntry, responseId: string): Promise<boolean> {
    if (!isResponseId(responseId)) return false;
    try {
      return await this.#store.delete({ organisationId: organisation.id, responseId });
    } catch (error) {
      throw storeUnavailable(error);
    }
  }
}
