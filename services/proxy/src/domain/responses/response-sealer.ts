import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** Bytes of the platform key stored Responses are sealed under (ConfigUpdate.response_store_key). */
export const responseStoreKeyBytes = 32;

/** Sealed record layout: version (1 byte) | IV (12) | GCM tag (16) | ciphertext. */
const sealedVersion = 1;
const ivBytes = 12;
const tagBytes = 16;
/** Most organisation keys kept derived at once; past it the cache starts over (derivation is microseconds). */
const maxCachedOrganisationKeys = 10_000;

/**
 * Seals and opens stored Responses (customer content) under a key of each organisation: AES-256-GCM
 * with the key HKDF-derived from the platform key and the organisation id, and the organisation id
 * and response id as associated data, so a record copied under another organisation's or
 * response's name does not open (docs/decisions.md, "Stored Responses").
 */
export interface ResponseSealer {
  /** The sealed bytes of a record of `organisationId`'s response `responseId`. */
  seal(organisationId: string, responseId: string, plaintext: Buffer): Buffer;
  /** The record's bytes; undefined when it does not open (another key, organisation or id, or tampered). */
  open(organisationId: string, responseId: string, sealed: Buffer): Buffer | undefined;
}

function associatedData(organisationId: string, responseId: string): Buffer {
  // A separator no id contains, so ("a", "b:c") and ("a:b", "c") differ.
  return Buffer.from(`${organisationId}\n${responseId}`, 'utf8');
}

/** A sealer over one platform key (32 bytes). */
function createResponseSealer(platformKey: Uint8Array): ResponseSealer {
  if (platformKey.length !== responseStoreKeyBytes) throw new Error(`a response store key has ${responseStoreKeyBytes} bytes (got ${platformKey.length})`);
  const keys = new Map<string, Buffer>();
  const keyOf = (organisationId: string): Buffer => {
    let key = keys.get(organisationId);
    if (key === undefined) {
      if (keys.size >= maxCachedOrganisationKeys) keys.clear();
      key = Buffer.from(hkdfSync('sha256', platformKey, Buffer.alloc(0), `gateway/response-store/org/v1/${organisationId}`, 32));
      keys.set(organisationId, key);
    }
    return key;
  };
  return {
    seal(organisationId, responseId, plaintext) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', keyOf(organisationId), iv);
      cipher.setAAD(associatedData(organisationId, responseId));
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([Buffer.of(sealedVersion), iv, cipher.getAuthTag(), body]);
    },
    open(organisationId, responseId, sealed) {
      if (sealed.length < 1 + ivBytes + tagBytes || sealed[0] !== sealedVersion) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyOf(organisationId), sealed.subarray(1, 1 + ivBytes));
        decipher.setAAD(associatedData(organisationId, responseId));
        decipher.setAuthTag(sealed.subarray(1 + ivBytes, 1 + ivBytes + tagBytes));
        return Buffer.concat([decipher.update(sealed.subarray(1 + ivBytes + tagBytes)), decipher.final()]);
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The sealer for the key a snapshot holds, built once per key. Without a key (an admin older
 * than it) a random key of this process is used, `onLocalKey` called once: records then open only
 * on this replica, until it restarts.
 */
export function responseSealerForKey(onLocalKey: () => void): (key: Uint8Array | undefined) => ResponseSealer {
  let local: ResponseSealer | undefined;
  let last: { key: Uint8Array; sealer: ResponseSealer } | undefined;
  return (key) => {
    if (key === undefined) {
      if (local === undefined) {
        onLocalKey();
        local = createResponseSealer(randomBytes(responseStoreKeyBytes));
      }
      return local;
    }
    if (last?.key !== key) {
      last = last !== undefined && Buffer.compare(last.key, key) === 0 ? { key, sealer: last.sealer } : { key, sealer: createResponseSealer(key) };
    }
    return last.sealer;
  };
}
