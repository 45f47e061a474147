import { configV1 } from '@gateway/contracts';
import { channelCredentials, type GrpcTransportSecurity } from '@gateway/grpc';
import { sharedTestPkiNow, testTransportSecurity } from '@gateway/testkit';

/** A config-stream client standing in for a proxy, over a real grpc-js channel. */
export interface FakeProxy {
  /** Every update received, in order. */
  updates: configV1.ConfigUpdate[];
  /** Every version acknowledged so far, recorded just before its ack is sent. */
  acknowledgedVersions: bigint[];
  /** Resolves with the status the admin ended the stream with (never rejects). */
  ended: Promise<{ code: number | undefined }>;
  /** Resolves with the first update (already received or future) that satisfies `predicate`. */
  next(predicate: (update: configV1.ConfigUpdate) => boolean, timeoutMs?: number): Promise<configV1.ConfigUpdate>;
  /** Sends an ack of `version`, with an error text when it could not be applied. */
  ack(version: bigint, error?: string): void;
  /** Ends the stream and closes the channel. */
  close(): void;
}

/**
 * Connects to the admin's config stream with the proxy's test certificate (or `security`) and says hello. With `autoAck` it acknowledges each
 * update after receiving it (after `ackDelayMs`, as a proxy busy applying it would); without,
 * it stays silent.
 */
export function connectFakeProxy(
  target: string, proxyId: string, options: { autoAck: boolean; ackDelayMs?: number; security?: GrpcTransportSecurity },
): FakeProxy {
  // The proxy's certificate of the shared test PKI unless a test dials as someone else.
  const security = options.security ?? testTransportSecurity(sharedTestPkiNow(), 'proxy');
  const client = new configV1.ConfigServiceClient(target, channelCredentials(security));
  const stream = client.streamConfig();
  const updates: configV1.ConfigUpdate[] = [];
  const acknowledgedVersions: bigint[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const waiting: Array<{ predicate: (update: configV1.ConfigUpdate) => boolean; resolve: (update: configV1.ConfigUpdate) => void }> = [];
  const ack = (version: bigint, error = '') => {
    if (error === '') acknowledgedVersions.push(version);
    stream.write(configV1.ConfigAck.fromPartial({ proxyId, appliedVersion: version, error }));
  };
  stream.on('data', (update: configV1.ConfigUpdate) => {
    updates.push(update);
    for (const waiter of [...waiting]) {
      if (waiter.predicate(update)) {
        waiting.splice(waiting.indexOf(waiter), 1);
        waiter.resolve(update);
      }
    }
    if (!options.autoAck) return;
    if (!options.ackDelayMs) {
      ack(update.version);
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      ack(update.version);
    }, options.ackDelayMs);
    timers.add(timer);
  });
  // The admin ends streams when it stops; tests see that through `ended`, not thrown errors.
  let markEnded: (status: { code: number | undefined }) => void = () => undefined;
  const ended = new Promise<{ code: number | undefined }>((resolve) => { markEnded = resolve; });
  stream.on('error', (error: { code?: number }) => markEnded({ code: error.code }));
  stream.on('end', () => markEnded({ code: 0 }));
  ack(0n);

  return {
    updates,
    acknowledgedVersions,
    ended,
    ack,
    next(predicate, timeoutMs = 5_000) {
      const seen = updates.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching config update within ${timeoutMs} ms`)), timeoutMs);
        waiting.push({ predicate, resolve: (update) => { clearTimeout(timer); resolve(update); } });
      });
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      stream.cancel();
      client.close();
    },
  };
}
