/**
 * Key rotation is a hard cutover, end to end: ledger, admin and two proxies as processes over
 * real PostgreSQL, a fake upstream, and a separate process hammering both proxies with the old
 * key while the rotate call runs. Zero requests with the old key that started after the call
 * returned may succeed, and the new key must work on every proxy at that very moment.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import type { HammerRecord } from '../support/admin-rotation-hammer.ts';
import { startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const nowMs = () => performance.timeOrigin + performance.now();

/** The hammer's records so far: its complete JSON lines (the last line may still be arriving). */
function recordsIn(output: string): HammerRecord[] {
  return output.slice(0, output.lastIndexOf('\n') + 1).split('\n')
    .filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as HammerRecord);
}

/** Waits (polling) until `condition` holds; fails after timeoutMs (a bound, not a timing assertion). */
async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!serverUrl)('key rotation cutover across proxies', () => {
  let gateway: E2eGateway;
  let proxyBases: string[] = [];

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl!, proxies: 2, rpmLimit: 1_000_000, creditMicros: 1_000_000_000n, logLevel: 'warn' });
    proxyBases = gateway.proxyBases;
  }, 90_000);

  afterAll(async () => {
    await gateway?.close();
  });

  it('refuses the old key on every proxy from the moment the rotate call returns, and accepts the new one there', async () => {
    const model = gateway.modelSlug;
    const created = await gateway.admin('POST', `/organisations/${gateway.organisationId}/projects`, { name: 'hammered' });
    const oldKey: string = created.api_key;

    const hammer = spawn(process.execPath, [fileURLToPath(new URL('../support/admin-rotation-hammer.ts', import.meta.url))], {
      env: { PATH: process.env.PATH ?? '', PROXY_URLS: proxyBases.join(','), API_KEY: oldKey, MODEL: model, CONCURRENCY: '2', MAX_DURATION_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let hammerOutput = '';
    hammer.stdout.on('data', (chunk: Buffer) => { hammerOutput += chunk.toString(); });
    hammer.stderr.on('data', (chunk: Buffer) => { hammerOutput += chunk.toString(); });
    const hammerExited = new Promise<number | null>((resolve) => hammer.once('exit', resolve));
    try {
      // Let the old key succeed under load on both proxies first.
      await waitUntil(() => proxyBases.every((proxy) => recordsIn(hammerOutput).some((record) => record.proxy === proxy && record.status === 200)),
        20_000, 'the old key answered 200 on every proxy');

      const rotation = await gateway.adminRequest('POST', `/projects/${created.project.id}/api-key-rotations`);
      expect(rotation.status).toBe(201);
      const returnedAtMs = nowMs();
      expect(rotation.headers.get('x-config-propagation')).toBeNull();
      const newKey: string = rotation.json.api_key;

      // Right now: the new key works and the old one is refused, on every proxy.
      const outcomes = await Promise.all(proxyBases.map(async (baseURL) => {
        const fresh = await new OpenAI({ apiKey: newKey, baseURL, maxRetries: 0 }).chat.completions.create({
          model, messages: [{ role: 'user', content: 'new key [[fake:reply_words=3]]' }],
        });
        const stale = await new OpenAI({ apiKey: oldKey, baseURL, maxRetries: 0 }).chat.completions.create({
          model, messages: [{ role: 'user', content: 'old key' }],
        }).then(() => 'accepted', (error: unknown) => error);
        return { model: fresh.model, stale };
      }));
      for (const outcome of outcomes) {
        expect(outcome.model).toBe(model);
        expect(outcome.stale).toBeInstanceOf(OpenAI.AuthenticationError);
      }
      // The hammer keeps going until it has sent the old key to every proxy after the rotation returned.
      await waitUntil(() => proxyBases.every((proxy) => recordsIn(hammerOutput).some((record) => record.proxy === proxy && record.startedAtMs > returnedAtMs)),
        20_000, 'old-key requests started after the rotation on every proxy');
      hammer.kill('SIGTERM');
      expect(await hammerExited).toBe(0);

      const records = recordsIn(hammerOutput);
      const before = records.filter((record) => record.endedAtMs < returnedAtMs);
      const after = records.filter((record) => record.startedAtMs > returnedAtMs);
      // The hammer really used the old key successfully on both proxies before the rotation...
      for (const proxy of proxyBases) expect(before.filter((record) => record.proxy === proxy && record.status === 200).length, proxy).toBeGreaterThan(0);
      // ...and kept going afterwards on both, with not one success.
      for (const proxy of proxyBases) expect(after.filter((record) => record.proxy === proxy).length, proxy).toBeGreaterThan(0);
      expect(after.filter((record) => record.status === 200)).toEqual([]);
      expect(new Set(after.map((record) => record.status))).toEqual(new Set([401]));
    } finally {
      if (hammer.exitCode === null) hammer.kill('SIGKILL');
    }
  }, 90_000);
});
