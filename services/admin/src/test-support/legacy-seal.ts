import { createCipheriv, randomBytes } from 'node:crypto';

/**
 * Seals a value in the old v1 format (`v1:<iv>:<tag>:<ciphertext>`, no key id), as every release
 * before key ids did: what rows written before an upgrade hold, for tests of opening and re-sealing them.
 */
export function sealLegacyV1(keyBase64: string, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), iv, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
}
