import { hkdfSync } from 'node:crypto';

/**
 * HKDF's info for this key: naming its purpose (and version) separates it from every other key
 * that may ever be derived from ADMIN_ENCRYPTION_KEY, and from the credential encryption that
 * uses ADMIN_ENCRYPTION_KEY itself.
 */
const toolCallIdKeyInfo = 'gateway/tool-call-id-key/v1';
const toolCallIdKeyBytes = 32;

/**
 * The 32-byte AES-256-GCM key every proxy seals the tool-call ids it shows clients with
 * (docs/surfaces/tool-call-ids.md), derived with HKDF-SHA256 (empty salt) from
 * ADMIN_ENCRYPTION_KEY (base64 of 32 bytes, validated by the config schema): the same on every
 * admin replica and across restarts, with no new secret to manage. Rotating ADMIN_ENCRYPTION_KEY
 * rotates it. It is a secret: never log it.
 */
export function deriveToolCallIdKey(encryptionKeyBase64: string): Buffer {
  const inputKey = Buffer.from(encryptionKeyBase64.trim(), 'base64');
  return Buffer.from(hkdfSync('sha256', inputKey, Buffer.alloc(0), toolCallIdKeyInfo, toolCallIdKeyBytes));
}
