import { status as GrpcStatus, type Server, type ServerDuplexStream } from '@grpc/grpc-js';
import { configV1 } from '@gateway/contracts';
import { createGrpcServer, startGrpcServer, stopGrpcServer, type GrpcTransportSecurity } from '@gateway/grpc';
import { sharedTestPki, testTransportSecurity } from '@gateway/testkit';

/** The configuration a config peer holds and sends as its full snapshot. */
export interface ConfigState {
  organisations: configV1.Organisation[];
  projects: configV1.Project[];
  apiKeys: configV1.ApiKey[];
  gatewayModels: configV1.GatewayModel[];
  /** Sent in every full snapshot, as the admin sends its derived key; absent: none (an older admin). */
  toolCallIdKey?: Buffer;
  /** Sent in every full snapshot, as the admin sends its derived key; absent: none (an older admin). */
  cacheScopeKey?: Buffer;
}

/** The changes of one delta, in the proto's terms; omitted lists are empty. */
export type ConfigDelta = Partial<Omit<configV1.ConfigUpdate, 'version' | 'full' | 'producedAtMs'>>;

/**
 * A small in-test admin: a real grpc-js server implementing ConfigService over a state the test
 * controls. On a hello it sends a full snapshot; the test pushes deltas and heartbeats, can make
 * it go silent, and reads every ack it received. A fake peer over real gRPC, not a mock.
 */
export interface ConfigPeer {
  /** host:port for ADMIN_GRPC_URL. */
  address: string;
  /** Credentials a proxy dials the peer with: the proxy's test certificate (the peer serves the admin's, mTLS). */
  proxySecurity: GrpcTransportSecurity;
  /** The current version. */
  version(): bigint;
  /** Every ack received, oldest first. */
  acks: configV1.ConfigAck[];
  /** Applies a delta to the held state, bumps the version and sends it to every open stream; returns the version. */
  pushDelta(delta: ConfigDelta): bigint;
  /** Sends a heartbeat (current version, no changes) to every open stream. */
  heartbeat(): void;
  /** Sends an arbitrary update as is (for updates a proxy must refuse); the held state is unchanged. */
  sendRaw(update: Partial<configV1.ConfigUpdate>): void;
  /** While silent the peer answers no hello and sends no heartbeat (a hung or partitioned admin). */
  setSilent(silent: boolean): void;
  /** Ends every open stream with UNAVAILABLE (an admin restart). */
  disconnectAll(): void;
  /** Number of open streams. */
  openStreams(): number;
  /** How many full snapshots the peer has sent (answers to hellos and to error acks). */
  fullSnapshotsSent(): number;
  /** Resolves once some stream acknowledged `version` (or later) without error. */
  waitForAck(version: bigint, timeoutMs?: number): Promise<void>;
  /** Stops serving, as a killed admin does (connections cut), keeping its state and version. */
  stop(): Promise<void>;
  /** Serves again on the same address with the state it had when stopped. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

function upsert<T>(list: T[], items: readonly T[], keyOf: (item: T) => string): T[] {
  const byKey = new Map(list.map((item) => [keyOf(item), item]));
  for (const item of items) byKey.set(keyOf(item), item);
  return [...byKey.values()];
}

/** Starts a config peer on 127.0.0.1, port 0, holding `initial`. */
export async function startConfigPeer(initial: ConfigState, options: { heartbeatIntervalMs?: number } = {}): Promise<ConfigPeer> {
  let state: ConfigState = structuredClone(initial);
  let version = 1n;
  let silent = false;
  let fullSnapshots = 0;
  const acks: configV1.ConfigAck[] = [];
  const streams = new Set<ServerDuplexStream<configV1.ConfigAck, configV1.ConfigUpdate>>();
  const ackWaiters: Array<{ version: bigint; resolve: () => void }> = [];

  const emptyUpdate = (): configV1.ConfigUpdate => configV1.ConfigUpdate.fromPartial({ version, producedAtMs: BigInt(Date.now()) });
  const fullSnapshot = (): configV1.ConfigUpdate => ({ ...emptyUpdate(), full: true, ...structuredClone(state) });

  const implementation = {
    streamConfig: (call: ServerDuplexStream<configV1.ConfigAck, configV1.ConfigUpdate>) => {
      streams.add(call);
      const forget = () => streams.delete(call);
      call.on('error', forget);
      call.on('close', forget);
      call.on('end', () => { forget(); call.end(); });
      call.on('data', (ack: configV1.ConfigAck) => {
        acks.push(ack);
        const isHello = ack.appliedVersion === 0n && ack.error === '';
        if ((isHello || ack.error !== '') && !silent) {
          fullSnapshots += 1;
          call.write(fullSnapshot());
        }
        if (ack.error === '') {
          for (const waiter of ackWaiters.filter((w) => ack.appliedVersion >= w.version)) {
            ackWaiters.splice(ackWaiters.indexOf(waiter), 1);
            waiter.resolve();
          }
        }
      });
    },
  };
  const pki = await sharedTestPki();
  const serve = async (onPort: number): Promise<{ server: Server; port: number }> => {
    const started = createGrpcServer();
    started.addService(configV1.ConfigServiceService, implementation);
    return { server: started, port: await startGrpcServer(started, '127.0.0.1', onPort, testTransportSecurity(pki, 'admin')) };
  };
  let { server, port } = await serve(0);
  let serving = true;

  const broadcast = (update: configV1.ConfigUpdate) => {
    for (const stream of streams) stream.write(update);
  };
  const heartbeatTimer = options.heartbeatIntervalMs === undefined
    ? undefined
    : setInterval(() => { if (!silent) broadcast(emptyUpdate()); }, options.heartbeatIntervalMs);

  return {
    address: `127.0.0.1:${port}`,
    proxySecurity: testTransportSecurity(pki, 'proxy'),
    version: () => version,
    acks,
    pushDelta(delta) {
      const removed = (ids: readonly string[] | undefined) => new Set(ids ?? []);
      const organisationsGone = removed(delta.removedOrganisationIds);
      const projectsGone = removed(delta.removedProjectIds);
      const keysGone = removed(delta.removedKeyHashes);
      const modelsGone = removed(delta.removedGatewayModelSlugs);
      state = {
        ...state,
        organisations: upsert(state.organisations.filter((o) => !organisationsGone.has(o.id)), delta.organisations ?? [], (o) => o.id),
        projects: upsert(state.projects.filter((p) => !projectsGone.has(p.id)), delta.projects ?? [], (p) => p.id),
        apiKeys: upsert(state.apiKeys.filter((k) => !keysGone.has(k.keyHash)), delta.apiKeys ?? [], (k) => k.keyHash),
        gatewayModels: upsert(state.gatewayModels.filter((m) => !modelsGone.has(m.slug)), delta.gatewayModels ?? [], (m) => m.slug),
      };
      version += 1n;
      broadcast(configV1.ConfigUpdate.fromPartial({ ...emptyUpdate(), ...delta, version, full: false }));
      return version;
    },
    heartbeat() { broadcast(emptyUpdate()); },
    sendRaw(update) { broadcast(configV1.ConfigUpdate.fromPartial({ ...emptyUpdate(), ...update })); },
    setSilent(value) { silent = value; },
    disconnectAll() {
      // grpc-js ends a server stream with the status of an emitted error.
      for (const stream of [...streams]) stream.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'admin restarting' });
      streams.clear();
    },
    openStreams: () => streams.size,
    fullSnapshotsSent: () => fullSnapshots,
    waitForAck(target, timeoutMs = 5000) {
      if (acks.some((ack) => ack.error === '' && ack.appliedVersion >= target)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ack of version ${target} within ${timeoutMs} ms`)), timeoutMs);
        ackWaiters.push({ version: target, resolve: () => { clearTimeout(timer); resolve(); } });
      });
    },
    async stop() {
      if (!serving) return;
      serving = false;
      server.forceShutdown();
      streams.clear();
    },
    async restart() {
      if (serving) return;
      ({ server, port } = await serve(port));
      serving = true;
    },
    async close() {
      clearInterval(heartbeatTimer);
      if (!serving) return;
      serving = false;
      for (const stream of streams) stream.end();
      await stopGrpcServer(server, 100);
    },
  };
}
