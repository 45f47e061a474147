/**
 * Certificates renewed on disk while everything runs: a real grpc-js server on port 0 and real
 * clients, certificates from local-pki, files replaced the way the kubelet updates a mounted
 * Secret (a new directory, then the `..data` symlink swapped). New connections get the new
 * certificate, open ones carry on, and nothing restarts; a new trust bundle is taken up too.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import {
  Server, makeGenericClientConstructor, status as GrpcStatus,
  type Client, type ClientDuplexStream, type ServerDuplexStream, type ServerUnaryCall, type ServiceDefinition, type ServiceError, type sendUnaryData,
} from '@grpc/grpc-js';
import { createLogger } from '@gateway/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelCredentials, clientChannelOptions, serverCredentials, serverOptions, type GrpcTransportSecurity } from './grpc-tls.ts';
import { grpcBindAddress } from './index.ts';
import { createCertificateAuthority, issueCertificate, type PemKeyPair } from './local-pki.ts';
import { fixedCertificates, watchCertificateFiles, type LoadedCertificates, type ServiceCertificates } from './service-certificates.ts';
import { callerRole, identityUri, type ServiceRole } from './service-identity.ts';

const text = { serialize: (value: string) => Buffer.from(value), deserialize: (bytes: Buffer) => bytes.toString() };
const definition: ServiceDefinition = {
  whoAmI: {
    path: '/test.Reload/WhoAmI', requestStream: false, responseStream: false, originalName: 'whoAmI',
    requestSerialize: text.serialize, requestDeserialize: text.deserialize, responseSerialize: text.serialize, responseDeserialize: text.deserialize,
  },
  echo: {
    path: '/test.Reload/Echo', requestStream: true, responseStream: true, originalName: 'echo',
    requestSerialize: text.serialize, requestDeserialize: text.deserialize, responseSerialize: text.serialize, responseDeserialize: text.deserialize,
  },
};
const ReloadClient = makeGenericClientConstructor(definition, 'Reload');
type ReloadClient = Client & {
  whoAmI(request: string, options: { deadline: number }, callback: (error: ServiceError | null, response?: string) => void): void;
  echo(): ClientDuplexStream<string, string>;
};

/** Logs land in an array; `logged` resolves when a line whose message includes `text` arrives. */
function capturingLogger() {
  const lines: string[] = [];
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const msg = String((JSON.parse(chunk.toString()) as { msg?: unknown }).msg);
      lines.push(msg);
      for (const waiter of waiters.filter((candidate) => msg.includes(candidate.text))) waiter.resolve();
      done();
    },
  });
  const logged = (wanted: string) => new Promise<void>((resolve) => { waiters.push({ text: wanted, resolve }); });
  return { logger: createLogger('test', 'info', destination), lines, logged };
}

let generation = 0;

/**
 * Publishes a Secret's files into `dir` as the kubelet's atomic writer does: the files go into a
 * new hidden directory, `..data_tmp` is pointed at it and renamed over `..data` (one atomic
 * step), and the visible names are symlinks through `..data`. Returns the paths services read.
 */
async function publishSecret(dir: string, files: { ca: string; pair: PemKeyPair }) {
  const version = `..${Date.now()}_${generation += 1}`;
  await mkdir(join(dir, version));
  await writeFile(join(dir, version, 'ca.crt'), files.ca);
  await writeFile(join(dir, version, 'tls.crt'), files.pair.certPem);
  await writeFile(join(dir, version, 'tls.key'), files.pair.keyPem, { mode: 0o600 });
  await symlink(version, join(dir, '..data_tmp'));
  const previous = await readlink(join(dir, '..data')).catch(() => undefined);
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of ['ca.crt', 'tls.crt', 'tls.key']) {
    await symlink(join('..data', name), join(dir, name)).catch((error: NodeJS.ErrnoException) => { if (error.code !== 'EEXIST') throw error; });
  }
  if (previous) await rm(join(dir, previous), { recursive: true });
  return { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
}

/** The SHA-256 fingerprint Node reports for a PEM certificate. */
const fingerprint = (pair: PemKeyPair) => new X509Certificate(pair.certPem).fingerprint256;

/** The fingerprint of the certificate the server presents to a new TLS connection (ALPN h2, as gRPC dials). */
function servedFingerprint(port: number, client: PemKeyPair): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1', port, servername: 'localhost', ALPNProtocols: ['h2'], cert: client.certPem, key: client.keyPem, rejectUnauthorized: false,
    }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

/** A client of the test service on a channel of its own (a fresh connection, never a shared subchannel). */
function newClient(port: number, security: GrpcTransportSecurity): ReloadClient {
  const client = new ReloadClient(`localhost:${port}`, channelCredentials(security), { ...clientChannelOptions, 'grpc.use_local_subchannel_pool': 1 });
  clients.push(client);
  return client as unknown as ReloadClient;
}

/** One WhoAmI call: the role the server saw on the caller's certificate, or the call's error. */
function whoAmI(client: ReloadClient): Promise<{ role?: string; error?: ServiceError }> {
  return new Promise((resolve) => {
    client.whoAmI('?', { deadline: Date.now() + 10_000 }, (error, response) => resolve(error ? { error } : { role: response }));
  });
}

/** Writes on an open Echo stream and resolves with the answer. */
function echoOnce(stream: ClientDuplexStream<string, string>, message: string): Promise<string> {
  return new Promise((resolve, reject) => {
    stream.once('data', resolve);
    stream.once('error', reject);
    stream.write(message);
  });
}

/** Resolves with the next certificates the watcher reloads. */
function nextReload(reloads: Array<(loaded: LoadedCertificates) => void>): Promise<LoadedCertificates> {
  return new Promise((resolve) => { reloads.push(resolve); });
}

const clients: Client[] = [];
const watchers: ServiceCertificates[] = [];
let server: Server;
let port: number;
let serverDir: string;
let clientDir: string;
const serverReloads: Array<(loaded: LoadedCertificates) => void> = [];
const clientReloads: Array<(loaded: LoadedCertificates) => void> = [];
let serverLog: ReturnType<typeof capturingLogger>;
let clientSecurity: GrpcTransportSecurity;
let caA: PemKeyPair;
let caB: PemKeyPair;
const leaf = (role: ServiceRole) => ({ commonName: role, uri: identityUri(role), dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });

beforeAll(async () => {
  const root = await mkdtemp(join(tmpdir(), 'gateway-cert-reload-'));
  serverDir = join(root, 'ledger-tls');
  clientDir = join(root, 'proxy-tls');
  await mkdir(serverDir);
  await mkdir(clientDir);
  caA = await createCertificateAuthority('test CA A');
  caB = await createCertificateAuthority('test CA B');
  const serverFiles = await publishSecret(serverDir, { ca: caA.certPem, pair: await issueCertificate(caA, leaf('ledger')) });
  const clientFiles = await publishSecret(clientDir, { ca: caA.certPem, pair: await issueCertificate(caA, leaf('proxy')) });

  serverLog = capturingLogger();
  // A poll far beyond the test: whatever reloads here, the directory watch did it.
  const serverCertificates = watchCertificateFiles(serverFiles, {
    logger: serverLog.logger, pollIntervalMs: 3_600_000, onReload: (loaded) => { for (const resolve of serverReloads.splice(0)) resolve(loaded); },
  });
  const clientCertificates = watchCertificateFiles(clientFiles, {
    logger: capturingLogger().logger, pollIntervalMs: 3_600_000, onReload: (loaded) => { for (const resolve of clientReloads.splice(0)) resolve(loaded); },
  });
  watchers.push(serverCertificates, clientCertificates);
  clientSecurity = { mode: 'mtls', certificates: clientCertificates };

  server = new Server(serverOptions);
  server.addService(definition, {
    whoAmI: (call: ServerUnaryCall<string, string>, callback: sendUnaryData<string>) => callback(null, callerRole(call) ?? 'nobody'),
    echo: (call: ServerDuplexStream<string, string>) => {
      call.on('data', (message: string) => call.write(`echo ${message}`));
      call.on('end', () => call.end());
    },
  });
  port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(grpcBindAddress('127.0.0.1', 0), serverCredentials({ mode: 'mtls', certificates: serverCertificates }), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
});

afterAll(() => {
  for (const client of clients) client.close();
  server?.forceShutdown();
  for (const watcher of watchers) watcher.close();
});

describe('certificates renewed on disk', () => {
  it('serves a renewed certificate to new connections while an open stream and the long-lived channel carry on, with no restart', async () => {
    const longLived = newClient(port, clientSecurity);
    expect(await whoAmI(longLived)).toEqual({ role: 'proxy' });
    const openStream = longLived.echo();
    expect(await echoOnce(openStream, 'before')).toBe('echo before');
    const before = watchers[0]!.current();
    expect(await servedFingerprint(port, await issueCertificate(caA, leaf('proxy')))).toBe(before.certFingerprint);

    // cert-manager renews: a new key and certificate from the same CA, swapped in by the kubelet.
    const renewed = await issueCertificate(caA, leaf('ledger'));
    const reloaded = nextReload(serverReloads);
    await publishSecret(serverDir, { ca: caA.certPem, pair: renewed });
    expect((await reloaded).certFingerprint).toBe(fingerprint(renewed));

    expect(await servedFingerprint(port, await issueCertificate(caA, leaf('proxy')))).toBe(fingerprint(renewed));
    expect(await whoAmI(newClient(port, clientSecurity))).toEqual({ role: 'proxy' });
    // The connections made before the renewal are still the ones in use, and still answer.
    expect(await echoOnce(openStream, 'after')).toBe('echo after');
    expect(await whoAmI(longLived)).toEqual({ role: 'proxy' });
    openStream.end();
  });

  it('keeps the certificates in use when the files do not belong together', async () => {
    const inUse = watchers[0]!.current().certFingerprint;
    const stray = await issueCertificate(caA, leaf('ledger'));
    const other = await issueCertificate(caA, leaf('ledger'));
    const refused = serverLog.logged('not reloaded');
    await publishSecret(serverDir, { ca: caA.certPem, pair: { certPem: stray.certPem, keyPem: other.keyPem } });
    await refused;
    expect(watchers[0]!.current().certFingerprint).toBe(inUse);
    expect(await servedFingerprint(port, await issueCertificate(caA, leaf('proxy')))).toBe(inUse);
    expect(await whoAmI(newClient(port, clientSecurity))).toEqual({ role: 'proxy' });
  });

  it('takes up a new trust bundle on both sides: a server that trusts the new CA, a client that verifies by it', async () => {
    // A caller with a certificate of the new CA is refused while the server trusts only the old one.
    const newCaCaller: GrpcTransportSecurity = {
      mode: 'mtls', certificates: fixedCertificates({ caPem: Buffer.from(`${caA.certPem}\n${caB.certPem}\n`), ...pemBuffers(await issueCertificate(caB, leaf('admin'))) }),
    };
    expect((await whoAmI(newClient(port, newCaCaller))).error?.code).toBe(GrpcStatus.UNAVAILABLE);

    // The server moves to a certificate of CA B and trusts both CAs.
    const bundle = `${caA.certPem}\n${caB.certPem}\n`;
    const serverReloaded = nextReload(serverReloads);
    await publishSecret(serverDir, { ca: bundle, pair: await issueCertificate(caB, leaf('ledger')) });
    await serverReloaded;
    expect(await whoAmI(newClient(port, newCaCaller))).toEqual({ role: 'admin' });

    // The watching client still trusts only CA A: a new connection cannot verify the server.
    expect((await whoAmI(newClient(port, clientSecurity))).error?.code).toBe(GrpcStatus.UNAVAILABLE);
    const clientReloaded = nextReload(clientReloads);
    await publishSecret(clientDir, { ca: bundle, pair: await issueCertificate(caA, leaf('proxy')) });
    await clientReloaded;
    expect(await whoAmI(newClient(port, clientSecurity))).toEqual({ role: 'proxy' });
  });

  it('picks up a change the directory watch cannot see through the poll', async () => {
    // The watched directory holds only symlinks into another one: a file rewritten there raises no
    // event where the watch looks, as on filesystems whose watches never fire.
    const root = await mkdtemp(join(tmpdir(), 'gateway-cert-poll-'));
    await mkdir(join(root, 'real'));
    await mkdir(join(root, 'mounted'));
    const first = await issueCertificate(caA, leaf('admin'));
    const write = async (pair: PemKeyPair) => {
      await writeFile(join(root, 'real', 'ca.crt'), caA.certPem);
      await writeFile(join(root, 'real', 'tls.crt'), pair.certPem);
      await writeFile(join(root, 'real', 'tls.key'), pair.keyPem);
    };
    await write(first);
    for (const name of ['ca.crt', 'tls.crt', 'tls.key']) await symlink(join(root, 'real', name), join(root, 'mounted', name));
    const polled: Array<(loaded: LoadedCertificates) => void> = [];
    const certificates = watchCertificateFiles(
      { caFile: join(root, 'mounted', 'ca.crt'), certFile: join(root, 'mounted', 'tls.crt'), keyFile: join(root, 'mounted', 'tls.key') },
      { logger: capturingLogger().logger, pollIntervalMs: 50, onReload: (loaded) => { for (const resolve of polled.splice(0)) resolve(loaded); } },
    );
    watchers.push(certificates);
    expect(certificates.current().certFingerprint).toBe(fingerprint(first));
    const second = await issueCertificate(caA, leaf('admin'));
    const reloaded = nextReload(polled);
    await write(second);
    expect((await reloaded).certFingerprint).toBe(fingerprint(second));
    expect(certificates.current().certFingerprint).toBe(fingerprint(second));
  });
});

/** A PEM pair as the Buffers ServicePems holds. */
function pemBuffers(pair: PemKeyPair) {
  return { certPem: Buffer.from(pair.certPem), keyPem: Buffer.from(pair.keyPem) };
}
