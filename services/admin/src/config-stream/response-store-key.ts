import { hkdfSync } from 'node:crypto';

/** HKDF's info for this key: its purpose and version, apart from every other key derived from ADMIN_ENCRYPTION_KEY. */
const responseStoreKeyInfo = 'gateway/response-store-key/v1';
const responseStoreKeyBytes = 32;

/**
 * The 32-byte key the proxies seal stored Responses under (ConfigUpdate.response_store_key; each
 * organisation's AES-256-GCM key is derived from it by the proxy), derived with HKDF-SHA256 (empty
 * salt) from ADMIN_ENCRYPTION_KEY: the same on every admin replica and across restarts. Rotating
 * ADMIN_ENCRYPTION_KEY rotates it, and stored Responses sealed before then no longer open (they
 * read as expired). A secret: never log it.
 */
export function deriveResponseStoreKey(encryptionKeyBase64: string): Buffer {
  const inputKey = Buffer.from(encryptionKeyBase64.trim(), 'base64');
  return Buffer.from(hkdfSync('sha256', inputKey, Buffer.alloc(0), responseStoreKeyInfo, responseStoreKeyBytes));
}
