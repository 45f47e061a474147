/**
 * A separate process that hammers proxies with one API key while a key rotation runs, for
 * tests/e2e/admin-rotation-cutover.e2e.test.ts. It keeps `CONCURRENCY` chat completions in
 * flight per proxy until it receives SIGTERM (or `MAX_DURATION_MS` passes), printing one JSON
 * line per request as it ends (so the test can wait for what it needs to have happened): which
 * proxy, when it started and ended (epoch ms, sub-millisecond, the same clock as the test
 * process) and the HTTP status (0 for a transport error).
 *
 * Environment: PROXY_URLS (comma-separated base URLs ending in /v1), API_KEY, MODEL,
 * CONCURRENCY (default 2), MAX_DURATION_MS (default 30000).
 */

/** One request the hammer made. */
export interface HammerRecord {
  proxy: string;
  startedAtMs: number;
  endedAtMs: number;
  status: number;
}

const nowMs = () => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const proxies = (process.env.PROXY_URLS ?? '').split(',').filter(Boolean);
  const apiKey = process.env.API_KEY ?? '';
  const model = process.env.MODEL ?? '';
  const concurrency = Number(process.env.CONCURRENCY ?? '2');
  const deadline = nowMs() + Number(process.env.MAX_DURATION_MS ?? '30000');
  if (proxies.length === 0 || apiKey === '' || model === '') throw new Error('PROXY_URLS, API_KEY and MODEL are required');

  let stopping = false;
  process.on('SIGTERM', () => { stopping = true; });
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hammer [[fake:reply_words=2]]' }], max_tokens: 8 });

  async function worker(proxy: string): Promise<void> {
    while (!stopping && nowMs() < deadline) {
      const startedAtMs = nowMs();
      let status = 0;
      try {
        const response = await fetch(`${proxy}/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body,
        });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        status = 0;
      }
      const record: HammerRecord = { proxy, startedAtMs, endedAtMs: nowMs(), status };
      process.stdout.write(`${JSON.stringify(record)}\n`);
    }
  }

  process.stdout.write('hammer started\n');
  await Promise.all(proxies.flatMap((proxy) => Array.from({ length: concurrency }, () => worker(proxy))));
}

await main();
