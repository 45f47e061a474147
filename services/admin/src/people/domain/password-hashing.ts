import { hash, verify, type Algorithm } from '@node-rs/argon2';

/**
 * argon2id with OWASP's first recommended setting: 19 MiB of memory, 2 passes, 1 lane
 * (`Algorithm.Argon2id` is 2; the package declares it as an ambient const enum, which isolated
 * modules cannot read by name).
 */
const passwordHashOptions = { algorithm: 2 as Algorithm, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** The shortest and longest password a person may set, characters. */
export const passwordLength = { min: 12, max: 200 } as const;

/** Hashes a password for storage: an argon2id PHC string with its own random salt. */
export function hashPassword(password: string): Promise<string> {
  return hash(password, passwordHashOptions);
}

/**
 * A hash of a random password nobody knows, made once per process with the same parameters:
 * verifying against it costs what a real verification costs, so an unknown email (or a person
 * without a password) answers in the same time as a wrong password.
 */
let dummyHash: Promise<string> | undefined;

/**
 * Whether `password` matches `storedHash`. A missing hash (unknown email, no password set yet)
 * is verified against the dummy hash and never matches. A malformed stored hash does not match.
 */
export async function verifyPassword(storedHash: string | null | undefined, password: string): Promise<boolean> {
  if (storedHash === null || storedHash === undefined) {
    dummyHash ??= hash(crypto.randomUUID(), passwordHashOptions);
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return verify(storedHash, password).catch(() => false);
}
