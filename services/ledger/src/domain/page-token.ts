/** Where a usage listing stopped: the last record's creation time (µs since the epoch) and id. */
export interface UsageCursor {
  createdAtMicros: bigint;
  id: bigint;
}

/** Version tag inside tokens, so a later format can refuse (or read) this one explicitly. */
const tokenVersion = 1;

/** Largest value either half of a cursor may take (int64). */
const maxCursorValue = 2n ** 63n - 1n;

/** Encodes a cursor as an opaque URL-safe token. */
export function encodePageToken(cursor: UsageCursor): string {
  return Buffer.from(JSON.stringify([tokenVersion, cursor.createdAtMicros.toString(), cursor.id.toString()])).toString('base64url');
}

/** Decodes a token from encodePageToken; undefined when it is not one (callers answer INVALID_ARGUMENT). */
export function decodePageToken(token: string): UsageCursor | undefined {
  if (token.length > 200 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== tokenVersion) return undefined;
  const [, createdAt, id] = parsed as unknown[];
  if (typeof createdAt !== 'string' || typeof id !== 'string') return undefined;
  if (!/^\d{1,19}$/.test(createdAt) || !/^\d{1,19}$/.test(id)) return undefined;
  const cursor = { createdAtMicros: BigInt(createdAt), id: BigInt(id) };
  if (cursor.createdAtMicros > maxCursorValue || cursor.id > maxCursorValue) return undefined;
  return cursor;
}
