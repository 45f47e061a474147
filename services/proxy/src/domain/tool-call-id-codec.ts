import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createReasoningSeal } from './reasoning-seal.ts';
import type { ToolCallIdCodec } from './tool-call-ids.ts';

// The tool-call ids the gateway shows clients (docs/surfaces/tool-call-ids.md): the upstream's
// id sealed with AES-256-GCM under the key the admin derives for every replica, so any replica
// can map an id back without keeping state. The id is
//   call_ + base64url(format ‖ iv ‖ AES-256-GCM(length ‖ upstream id ‖ zero padding) ‖ tag)
// and always exactly gatewayToolCallIdLength characters: the padding hides the upstream id's
// length, which would otherwise tell one vendor's ids (toolu_ + 24) from another's (call_ + 24).

/** Length of the key that seals tool-call ids, bytes (AES-256). */
export const toolCallIdKeyBytes = 32;

const gatewayIdPrefix = 'call_';
/** The format byte sealed ids start with; a new format gets a new byte (and its own associated data). */
const formatVersion = 1;
/** GCM's standard nonce size, bytes; random per id. */
const ivBytes = 12;
const tagBytes = 16;
/** Longest upstream tool-call id carried, UTF-8 bytes (vendors use under 64). */
const maxUpstreamIdBytes = 128;
/**
 * The sealed plaintext, bytes: one length byte, the id, zeros. One byte more than the longest id
 * needs, so the sealed payload (159 bytes) is a multiple of 3 and its base64url has no loose bits:
 * each id has exactly one spelling, and any changed character changes the bytes.
 */
const sealedPlaintextBytes = 130;
/** The length byte of an upstream id too long to carry: such an id is sealed, never revealed. */
const withheldMarker = 0xff;
const sealedBytes = 1 + ivBytes + sealedPlaintextBytes + tagBytes;
/** Every id the gateway issues has this many characters (217), within the 256 a request's tool_call_id may have. */
const gatewayToolCallIdLength = gatewayIdPrefix.length + (sealedBytes / 3) * 4;
/** Bound into every seal: an id sealed for another purpose or format under the same key does not open as one of these. */
const associatedData = Buffer.from('gateway.tool-call-id.v1', 'utf8');
const gatewayIdPattern = new RegExp(`^${gatewayIdPrefix}[A-Za-z0-9_-]{${gatewayToolCallIdLength - gatewayIdPrefix.length}}$`);

/**
 * The codec that seals upstream tool-call ids under a 32-byte key (the snapshot's
 * tool_call_id_key) and opens them again. Sealing draws a random IV, so the same upstream id
 * concealed twice gets two different gateway ids, each of which reveals to it. `reveal` gives:
 * the upstream's id for an id this key sealed; the id unchanged when it does not have the
 * gateway's shape (ids a client made up or imported, such as OpenAI's own `call_` + 24); and
 * undefined for an id with the gateway's shape that does not open (altered, sealed under another
 * key such as one before an ADMIN_ENCRYPTION_KEY rotation, or withheld as too long).
 */
function createToolCallIdCodec(key: Uint8Array): ToolCallIdCodec {
  if (key.length !== toolCallIdKeyBytes) throw new Error(`a tool-call id key has ${toolCallIdKeyBytes} bytes (got ${key.length})`);
  const keyBytes = Buffer.from(key);

  return {
    reasoning: createReasoningSeal(keyBytes),

    conceal(upstreamId) {
      const idBytes = Buffer.from(upstreamId, 'utf8');
      const plaintext = Buffer.alloc(sealedPlaintextBytes);
      // An absurdly long id is still concealed (the answer carrying it is delivered and billed
      // whole), but cannot be carried back: its reveal is refused with a 400.
      if (idBytes.length <= maxUpstreamIdBytes) {
        plaintext[0] = idBytes.length;
        idBytes.copy(plaintext, 1);
      } else {
        plaintext[0] = withheldMarker;
      }
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', keyBytes, iv, { authTagLength: tagBytes });
      cipher.setAAD(associatedData);
      const sealed = Buffer.concat([Buffer.of(formatVersion), iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return gatewayIdPrefix + sealed.toString('base64url');
    },

    reveal(clientId) {
      if (!gatewayIdPattern.test(clientId)) return clientId;
      const sealed = Buffer.from(clientId.slice(gatewayIdPrefix.length), 'base64url');
      if (sealed.length !== sealedBytes || sealed[0] !== formatVersion) return undefined;
      const iv = sealed.subarray(1, 1 + ivBytes);
      const ciphertext = sealed.subarray(1 + ivBytes, 1 + ivBytes + sealedPlaintextBytes);
      const tag = sealed.subarray(1 + ivBytes + sealedPlaintextBytes);
      let plaintext: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyBytes, iv, { authTagLength: tagBytes });
        decipher.setAAD(associatedData);
        decipher.setAuthTag(tag);
        plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
      } catch {
        return undefined;
      }
      const length = plaintext[0]!;
      if (length > maxUpstreamIdBytes) return undefined;
      return plaintext.subarray(1, 1 + length).toString('utf8');
    },
  };
}

/**
 * The codec for the key a snapshot holds, built once per key rather than per request. A
 * snapshot without a key (an admin older than the key) gets a random key of this process,
 * made once with `onLocalKey` called once (the warning): its ids then open only on the replica
 * that issued them.
 */
export function toolCallIdCodecForKey(onLocalKey: () => void): (key: Uint8Array | undefined) => ToolCallIdCodec {
  let local: ToolCallIdCodec | undefined;
  let last: { key: Uint8Array; codec: ToolCallIdCodec } | undefined;
  return (key) => {
    if (key === undefined) {
      if (local === undefined) {
        onLocalKey();
        local = createToolCallIdCodec(randomBytes(toolCallIdKeyBytes));
      }
      return local;
    }
    if (last?.key !== key) {
      // A full snapshot brings the same key in a new buffer: compare the bytes before rebuilding.
      last = last !== undefined && Buffer.compare(last.key, key) === 0 ? { key, codec: last.codec } : { key, codec: createToolCallIdCodec(key) };
    }
    return last.codec;
  };
}
