import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from './password-hashing.ts';

describe('password hashing', () => {
  it('stores argon2id with 19 MiB, 2 passes, 1 lane, and a fresh salt each time', async () => {
    const first = await hashPassword('correct horse battery');
    const second = await hashPassword('correct horse battery');
    expect(first).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(first).not.toBe(second);
  });

  it('verifies the right password only', async () => {
    const stored = await hashPassword('correct horse battery');
    expect(await verifyPassword(stored, 'correct horse battery')).toBe(true);
    expect(await verifyPassword(stored, 'correct horse batterY')).toBe(false);
  });

  it('never matches without a stored hash or with a malformed one', async () => {
    expect(await verifyPassword(null, 'anything at all')).toBe(false);
    expect(await verifyPassword(undefined, '')).toBe(false);
    expect(await verifyPassword('not a phc string', 'anything at all')).toBe(false);
  });
});
