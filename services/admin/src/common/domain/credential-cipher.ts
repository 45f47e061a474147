import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Encrypts and decrypts upstream credentials at rest (AES-256-GCM). */
export interface CredentialCipher {
  /**
   * Seals a plaintext as `v1:<iv>:<tag>:<ciphertext>` (base64 parts). `context` is bound as
   * additional authenticated data, so a sealed value copied to another row fails to open.
   */
  encrypt(plaintext: string, context: string): string;
  /** Opens a value sealed by `encrypt` with the same key and context; throws if it was altered. */
  decrypt(sealed: string, context: string): string;
}

const keyLengthBytes = 32;
const ivLengthBytes = 12; // the GCM standard nonce size; random per value
const tagLengthBytes = 16;
const formatVersion = 'v1';
const base64Pattern = /^[A-Za-z0-9+/]+={0,2}$/;

/** Why a configured key is unusable (undefined when it is a base64 encoding of 32 bytes). Never echoes the key. */
export function encryptionKeyProblem(keyBase64: string): string | undefined {
  const trimmed = keyBase64.trim();
  if (!base64Pattern.test(trimmed)) return 'must be base64 of 32 random bytes (e.g. `openssl rand -base64 32`)';
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== keyLengthBytes) return `must decode to exactly ${keyLengthBytes} bytes (it decodes to ${key.length})`;
  return undefined;
}

/** Creates the cipher for a key given as base64 of 32 bytes (validated by the config schema). */
export function createCredentialCipher(keyBase64: string): CredentialCipher {
  const problem = encryptionKeyProblem(keyBase64);
  if (problem) throw new Error(`ADMIN_ENCRYPTION_KEY ${problem}`);
  const key = Buffer.from(keyBase64.trim(), 'base64');

  return {
    encrypt(plaintext, context) {
      const iv = randomBytes(ivLengthBytes);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: tagLengthBytes });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [formatVersion, iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
    },
    decrypt(sealed, context) {
      const parts = sealed.split(':');
      if (parts.length !== 4 || parts[0] !== formatVersion) throw new Error('stored credential has an unknown format');
      const [, ivPart, tagPart, ciphertextPart] = parts as [string, string, string, string];
      const iv = Buffer.from(ivPart, 'base64');
      const tag = Buffer.from(tagPart, 'base64');
      if (iv.length !== ivLengthBytes || tag.length !== tagLengthBytes) throw new Error('stored credential has an unknown format');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: tagLengthBytes });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(Buffer.from(ciphertextPart, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        // No detail: the cause is a wrong ADMIN_ENCRYPTION_KEY or an altered value, never worth echoing.
        throw new Error('stored credential cannot be decrypted: wrong ADMIN_ENCRYPTION_KEY or altered value');
      }
    },
  };
}
