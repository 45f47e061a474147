import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** What opening a sealed value found: the plaintext and which configured key opened it. */
interface OpenedValue {
  plaintext: string;
  /** The id of the key that opened it (`encryptionKeyId`). */
  keyId: string;
  /** true: it was sealed in the old `v1` format (no key id in it), so it wants re-sealing whatever its key. */
  legacyFormat: boolean;
}

/**
 * Encrypts and decrypts secrets at rest (AES-256-GCM) under a key ring: the current key seals,
 * the current and every previous key open (docs/operations.md "Rotating ADMIN_ENCRYPTION_KEY").
 */
export interface CredentialCipher {
  /** The id of the key that seals (ADMIN_ENCRYPTION_KEY's `encryptionKeyId`). */
  readonly currentKeyId: string;
  /**
   * Seals a plaintext as `v2:<key id>:<iv>:<tag>:<ciphertext>` (base64 parts) under the current
   * key. `context` is bound as additional authenticated data, so a sealed value copied to another
   * row fails to open.
   */
  encrypt(plaintext: string, context: string): string;
  /** Opens a value sealed by `encrypt` (or the old v1 format) with the same context; throws SealedValueError. */
  decrypt(sealed: string, context: string): string;
  /** Opens a value and says which key opened it (what re-encryption and its check read); throws SealedValueError. */
  open(sealed: string, context: string): OpenedValue;
}

/** Why a stored value did not open: its format, a key id that is not configured, or a wrong key / altered value. */
type SealedValueProblem = 'unknown_format' | 'unknown_key' | 'undecryptable';

/** A stored value that did not open. Its message names a key id at most, never a key or a plaintext. */
export class SealedValueError extends Error {
  /** Why it did not open. */
  readonly problem: SealedValueProblem;
  /** The key id the value names (not a key), when it names one. */
  readonly keyId: string | undefined;
  constructor(problem: SealedValueProblem, message: string, keyId?: string) {
    super(message);
    this.name = 'SealedValueError';
    this.problem = problem;
    this.keyId = keyId;
  }
}

const keyLengthBytes = 32;
const ivLengthBytes = 12; // the GCM standard nonce size; random per value
const tagLengthBytes = 16;
const legacyFormat = 'v1'; // v1:<iv>:<tag>:<ciphertext>, sealed by the only key there was
const currentFormat = 'v2'; // v2:<key id>:<iv>:<tag>:<ciphertext>
const base64Pattern = /^[A-Za-z0-9+/]+={0,2}$/;
const keyIdPattern = /^[0-9a-f]{8}$/;
/** SHA-256's input prefix for key ids, apart from every other hash of the key (and from HKDF's derived keys). */
const keyIdLabel = 'gateway/admin-encryption-key-id/v1\0';

/** Why a configured key is unusable (undefined when it is a base64 encoding of 32 bytes). Never echoes the key. */
export function encryptionKeyProblem(keyBase64: string): string | undefined {
  const trimmed = keyBase64.trim();
  if (!base64Pattern.test(trimmed)) return 'must be base64 of 32 random bytes (e.g. `openssl rand -base64 32`)';
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== keyLengthBytes) return `must decode to exactly ${keyLengthBytes} bytes (it decodes to ${key.length})`;
  return undefined;
}

/** The keys of a comma-separated list (ADMIN_ENCRYPTION_KEYS_PREVIOUS), trimmed, empty entries dropped. */
export function parseEncryptionKeyList(list: string): string[] {
  return list.split(',').map((entry) => entry.trim()).filter((entry) => entry.length > 0);
}

/** Why a comma-separated key list is unusable, naming the entry by position (never echoing it); undefined when usable. */
export function encryptionKeyListProblem(list: string): string | undefined {
  const problems = parseEncryptionKeyList(list).flatMap((key, index) => {
    const problem = encryptionKeyProblem(key);
    return problem ? [`entry ${index + 1} ${problem}`] : [];
  });
  return problems.length > 0 ? `${problems.join('; ')} (a comma-separated list of keys)` : undefined;
}

/**
 * A key's public name, 8 hex digits: the start of SHA-256 over a purpose label and the key. It
 * is written into every value the key seals so the right key opens it, and it is what the
 * re-encrypt command and errors report; 32 bits of a hash of a 256-bit random key reveal nothing usable.
 */
function encryptionKeyId(keyBase64: string): string {
  return createHash('sha256').update(keyIdLabel).update(Buffer.from(keyBase64.trim(), 'base64')).digest('hex').slice(0, 8);
}

function seal(key: Buffer, plaintext: string, context: string): { iv: Buffer; tag: Buffer; ciphertext: Buffer } {
  const iv = randomBytes(ivLengthBytes);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: tagLengthBytes });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ciphertext };
}

/** The plaintext, or undefined when this key (or the context) is not the one the value was sealed with, or it was altered. */
function unseal(key: Buffer, parts: { iv: Buffer; tag: Buffer; ciphertext: Buffer }, context: string): string | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, parts.iv, { authTagLength: tagLengthBytes });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** The parts of a stored value, or a SealedValueError saying its format is unknown. */
function parseSealed(sealed: string): { keyId: string | undefined; iv: Buffer; tag: Buffer; ciphertext: Buffer } {
  const parts = sealed.split(':');
  const unknown = () => new SealedValueError('unknown_format', 'stored secret has an unknown format');
  let keyId: string | undefined;
  let rest: string[];
  if (parts.length === 4 && parts[0] === legacyFormat) {
    rest = parts.slice(1);
  } else if (parts.length === 5 && parts[0] === currentFormat && keyIdPattern.test(parts[1]!)) {
    keyId = parts[1];
    rest = parts.slice(2);
  } else {
    throw unknown();
  }
  const [iv, tag, ciphertext] = rest.map((part) => Buffer.from(part, 'base64')) as [Buffer, Buffer, Buffer];
  if (iv.length !== ivLengthBytes || tag.length !== tagLengthBytes) throw unknown();
  return { keyId, iv, tag, ciphertext };
}

/**
 * Creates the cipher: `currentKeyBase64` (ADMIN_ENCRYPTION_KEY) seals and opens, each of
 * `previousKeysBase64` (ADMIN_ENCRYPTION_KEYS_PREVIOUS) only opens. Keys are base64 of 32 bytes
 * (validated by the config schema); a previous key equal to the current one is harmless and
 * ignored. Two different keys with one id (a 1-in-4-billion accident) are refused.
 */
export function createCredentialCipher(currentKeyBase64: string, previousKeysBase64: readonly string[] = []): CredentialCipher {
  const problem = encryptionKeyProblem(currentKeyBase64);
  if (problem) throw new Error(`ADMIN_ENCRYPTION_KEY ${problem}`);
  const listProblem = encryptionKeyListProblem(previousKeysBase64.join(','));
  if (listProblem) throw new Error(`ADMIN_ENCRYPTION_KEYS_PREVIOUS: ${listProblem}`);
  const keys = new Map<string, Buffer>(); // key id → key; the current key first
  for (const keyBase64 of [currentKeyBase64, ...previousKeysBase64]) {
    const id = encryptionKeyId(keyBase64);
    const key = Buffer.from(keyBase64.trim(), 'base64');
    const known = keys.get(id);
    if (known && !known.equals(key)) throw new Error(`two different encryption keys share the key id ${id}: generate a new ADMIN_ENCRYPTION_KEY`);
    keys.set(id, key);
  }
  const currentKeyId = encryptionKeyId(currentKeyBase64);
  const currentKey = keys.get(currentKeyId)!;
  const undecryptable = (keyId?: string) => new SealedValueError('undecryptable',
    // No detail: the cause is a wrong key or an altered value, never worth echoing.
    keyId === undefined
      ? 'stored secret (v1 format) cannot be decrypted with ADMIN_ENCRYPTION_KEY or any of ADMIN_ENCRYPTION_KEYS_PREVIOUS: wrong key or altered value'
      : `stored secret sealed with key id ${keyId} cannot be decrypted: altered value, or another key with that id`,
    keyId);

  const open = (sealed: string, context: string): OpenedValue => {
    const parts = parseSealed(sealed);
    if (parts.keyId === undefined) {
      // v1 names no key: try each configured one, the current first (GCM's tag tells a wrong key).
      for (const [keyId, key] of keys) {
        const plaintext = unseal(key, parts, context);
        if (plaintext !== undefined) return { plaintext, keyId, legacyFormat: true };
      }
      throw undecryptable();
    }
    const key = keys.get(parts.keyId);
    if (!key) {
      throw new SealedValueError('unknown_key',
        `stored secret was sealed with encryption key id ${parts.keyId}, which is not configured: set that key as ADMIN_ENCRYPTION_KEY or in ADMIN_ENCRYPTION_KEYS_PREVIOUS`,
        parts.keyId);
    }
    const plaintext = unseal(key, parts, context);
    if (plaintext === undefined) throw undecryptable(parts.keyId);
    return { plaintext, keyId: parts.keyId, legacyFormat: false };
  };

  return {
    currentKeyId,
    encrypt(plaintext, context) {
      const { iv, tag, ciphertext } = seal(currentKey, plaintext, context);
      return [currentFormat, currentKeyId, iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
    },
    decrypt: (sealed, context) => open(sealed, context).plaintext,
    open,
  };
}
