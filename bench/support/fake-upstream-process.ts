/**
 * The fake upstream as its own process, so its work is not counted against the gateway or the
 * load generator. Prints `{"port":N}` on its first stdout line. The recorded requests are
 * dropped every second: a benchmark sends far more than a test and needs none of them.
 */
import { startFakeUpstream } from '@gateway/fake-upstream';

// FAKE_UPSTREAM_KEEP_ALIVE_MS: a client far slower than usual (a proxy under valgrind) must not find its idle connections closed under it.
const keepAlive = process.env.FAKE_UPSTREAM_KEEP_ALIVE_MS;
const upstream = await startFakeUpstream({ host: '127.0.0.1', port: 0, name: 'bench', recordRequests: false, ...(keepAlive === undefined ? {} : { keepAliveTimeoutMs: Number(keepAlive) }) });
setInterval(() => { upstream.requests.length = 0; }, 1000).unref();
process.stdout.write(`${JSON.stringify({ port: upstream.port })}\n`);
process.on('SIGTERM', () => { void upstream.close().then(() => process.exit(0)); });
