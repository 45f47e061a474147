import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Prefixes of the gateway's bearer secrets. A recognizable prefix lets secret scanners find a
 * leaked key and tells a reader what it is for.
 */
export const secretPrefixes = {
  /** A Project's API key for inference (`/v1/*`). */
  apiKey: 'gwsk_',
  /** A platform-admin or organisation token for the admin API (`/admin/v1/*`). */
  adminToken: 'gwadm_',
} as const;

/** The kind of a bearer secret, named after its prefix. */
export type SecretKind = keyof typeof secretPrefixes;

/** A freshly issued secret: shown once to its owner; only `hash` is ever stored. */
export interface IssuedSecret {
  /** The whole secret; returned to the caller once and never stored or logged. */
  secret: string;
  /** Hex SHA-256 of the whole secret: what is stored and pushed to proxies. */
  hash: string;
  /** A short hint safe to display, e.g. `gwsk_…x7Qa`. */
  hint: string;
}

const randomBytesLength = 32; // 256 bits of randomness, above the 192 the architecture asks for
const bodyLength = 43; // base64url of 32 bytes, no padding
const checksumLength = 6; // base64url of a 4-byte CRC32
const bodyPattern = /^[A-Za-z0-9_-]+$/;

function checksumOf(prefixAndBody: string): string {
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(prefixAndBody));
  return crc.toString('base64url');
}

/** Issues a new secret of a kind: prefix, 256 random bits, and a CRC32 checksum. */
export function issueSecret(kind: SecretKind): IssuedSecret {
  const prefixAndBody = secretPrefixes[kind] + randomBytes(randomBytesLength).toString('base64url');
  const secret = prefixAndBody + checksumOf(prefixAndBody);
  return { secret, hash: hashSecret(secret), hint: hintOf(secret) };
}

/**
 * Whether a presented value is well formed for its kind: prefix, length, alphabet and checksum.
 * A mistyped or truncated key fails here, before any lookup.
 */
export function isWellFormedSecret(kind: SecretKind, value: string): boolean {
  const prefix = secretPrefixes[kind];
  if (value.length !== prefix.length + bodyLength + checksumLength || !value.startsWith(prefix)) return false;
  const body = value.slice(prefix.length, prefix.length + bodyLength);
  if (!bodyPattern.test(body)) return false;
  const checksum = value.slice(prefix.length + bodyLength);
  return checksum === checksumOf(prefix + body);
}

/**
 * Hex SHA-256 of a secret. A fast hash is right here: the secret carries 256 random bits, so
 * there is nothing to brute-force, and the proxy hashes on every request.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Compares two hex hashes in constant time. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** A display hint of a secret that reveals nothing useful: its prefix and last four characters. */
export function hintOf(secret: string): string {
  const prefix = Object.values(secretPrefixes).find((p) => secret.startsWith(p)) ?? '';
  return `${prefix}…${secret.slice(-4)}`;
}

/** Reads the bearer value of an Authorization header; undefined when absent or not Bearer. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
