import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

// A model's reasoning signatures, redacted thinking and Responses' encrypted_content are the
// upstream's own tokens: their form tells which vendor serves a slug, and a client could forge one
// for another model. Clients get them sealed (AES-256-GCM) under a key derived from the key
// tool-call ids are sealed with (the same on every replica), and only what this gateway sealed
// opens again on the way back (docs/surfaces/reasoning.md).

/** What sealed reasoning starts with: the gateway's own, versioned form. */
const sealedPrefix = 'gwr1_';
const ivBytes = 12;
const tagBytes = 16;
/** Bound into every seal, so nothing sealed for another purpose under the same key opens as this. */
const associatedData = Buffer.from('gateway.reasoning.v1', 'utf8');

/** Seals and opens reasoning tokens (signatures, redacted thinking, encrypted content). */
export interface ReasoningSeal {
  /** The sealed form a client is shown of an upstream's opaque reasoning token (or reasoning text). */
  seal(plain: string): string;
  /** The upstream's token behind a sealed one; undefined for anything this key did not seal, or altered. */
  open(sealed: string): string | undefined;
}

/** The seal under a key derived (HKDF-SHA256) from the 32-byte tool-call id key. */
export function createReasoningSeal(toolCallIdKey: Uint8Array): ReasoningSeal {
  const key = Buffer.from(hkdfSync('sha256', toolCallIdKey, Buffer.alloc(0), 'gateway.reasoning-seal.v1', 32));
  return {
    seal(plain) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: tagBytes });
      cipher.setAAD(associatedData);
      const sealed = Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return sealedPrefix + sealed.toString('base64url');
    },
    open(sealed) {
      if (!sealed.startsWith(sealedPrefix)) return undefined;
      const bytes = Buffer.from(sealed.slice(sealedPrefix.length), 'base64url');
      if (bytes.length < ivBytes + tagBytes) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, ivBytes), { authTagLength: tagBytes });
        decipher.setAAD(associatedData);
        decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
        return Buffer.concat([decipher.update(bytes.subarray(ivBytes, bytes.length - tagBytes)), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}
