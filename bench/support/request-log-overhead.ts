/**
 * The proxy CPU the request log costs per request (the bound: at most 3% of the proxy's CPU per
 * request), measured in process with the proxy's own code, as pricing-overhead.ts measures
 * pricing: two whole proxies on a shared machine differ by more than 3%, so the gateway run's
 * on/off comparison shows the noise, and this figure shows the code.
 *
 * Per request the proxy builds the record of the finished request (requestRecordOf, with a
 * Settle's token classes) and hands it to the recorder (add); per batch of 500 the recorder's send
 * encodes the RecordRequests message (the protobuf encode grpc-js runs; its framing and the socket
 * write, a few µs per batch, are left out). The sum per request is reported in µs of CPU.
 */
import { ledgerV1 } from '../../packages/contracts/src/index.ts';
import { createLogger } from '@gateway/logger';
import { RequestLogRecorder, requestRecordOf } from '../../services/proxy/src/request-log/request-log-recorder.ts';

/** CPU µs per request the request log costs the proxy (record built, buffered, batch encoded). */
export interface RequestLogOverhead {
  usPerRequest: number;
  iterations: number;
}

/** Runs `iterations` requests through the recorder with an encoding send; CPU µs per request. */
async function runOnce(iterations: number): Promise<number> {
  let encodedBytes = 0;
  const recorder = new RequestLogRecorder({
    logger: createLogger('proxy', 'silent'),
    // The encode grpc-js would run for the call; answered at once.
    send: async (records) => { encodedBytes += ledgerV1.RecordRequestsRequest.encode({ records }).finish().length; },
  });
  const classes = [
    { tokenClass: 'input' as const, tokens: 120, costMicros: 18n, providerCostMicros: 12n },
    { tokenClass: 'cached_input' as const, tokens: 900, costMicros: 14n, providerCostMicros: 9n },
    { tokenClass: 'output' as const, tokens: 64, costMicros: 39n, providerCostMicros: 26n },
  ];
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i += 1) {
    const startedAtMs = performance.now();
    recorder.add(requestRecordOf({
      requestId: `req_${i}`, organisationId: 'org_bench', projectId: 'proj_bench', surface: 'chat_completions', model: 'bench',
      status: 200, errorCode: undefined, stream: i % 2 === 0, startedAtMs, firstByteAtMs: startedAtMs + 0.4, endedAtMs: startedAtMs + 1.2,
      promptTokens: 1_020, completionTokens: 64, costMicros: 71n, classes,
    }));
    // As between requests in the proxy: the batch just sent is answered before the next fills.
    if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
  }
  const spent = process.cpuUsage(before);
  if (encodedBytes === 0 && iterations >= 500) throw new Error('the recorder sent nothing');
  return (spent.user + spent.system) / iterations;
}

/** Measures `iterations` requests (the median of three runs, after a warm-up). */
export async function measureRequestLogOverhead(iterations = 200_000): Promise<RequestLogOverhead> {
  await runOnce(iterations / 10);
  const runs = [await runOnce(iterations), await runOnce(iterations), await runOnce(iterations)].sort((a, b) => a - b);
  return { usPerRequest: Number(runs[1]!.toFixed(3)), iterations };
}
