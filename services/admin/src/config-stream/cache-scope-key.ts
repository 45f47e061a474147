import { hkdfSync } from 'node:crypto';

/** HKDF's info for this key: its purpose and version, apart from every other key derived from ADMIN_ENCRYPTION_KEY. */
const cacheScopeKeyInfo = 'gateway/cache-scope-key/v1';
const cacheScopeKeyBytes = 32;

/**
 * The 32-byte HMAC key every proxy marks an organisation's cacheable prompts with (docs/decisions.md,
 * "Prompt caching, isolated per organisation"), derived with HKDF-SHA256 (empty salt) from
 * ADMIN_ENCRYPTION_KEY: the same on every admin replica and across restarts, so every proxy marks
 * an organisation alike and they share its upstream cache. Rotating ADMIN_ENCRYPTION_KEY rotates
 * it (every organisation's cache starts cold once). It is a secret: never log it.
 */
export function deriveCacheScopeKey(encryptionKeyBase64: string): Buffer {
  const inputKey = Buffer.from(encryptionKeyBase64.trim(), 'base64');
  return Buffer.from(hkdfSync('sha256', inputKey, Buffer.alloc(0), cacheScopeKeyInfo, cacheScopeKeyBytes));
}
