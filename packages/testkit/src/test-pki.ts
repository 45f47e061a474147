import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createCertificateAuthority, fixedCertificates, identityUri, issueCertificate, serviceRoles,
  type GrpcTransportSecurity, type PemKeyPair, type ServiceRole,
} from '@gateway/grpc';

/** Who a test certificate belongs to: a service role, or one of the two impostors. */
export type TestIdentity = ServiceRole | 'stranger' | 'nobody';

/** PEM file paths of one identity's credentials. */
export interface TestTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/**
 * A throwaway PKI for tests: a CA, a certificate per service role signed by it, a `stranger`
 * certificate with the proxy's identity URI signed by ANOTHER CA, and a `nobody` certificate
 * signed by the right CA with no identity URI. Every certificate is valid for localhost,
 * 127.0.0.1 and ::1, as server and client.
 */
export interface TestPki {
  /** Directory holding the PEM files. */
  dir: string;
  /** The deployment's CA certificate, PEM. */
  caPem: string;
  /** Certificates and keys in memory, per identity. */
  identities: Record<TestIdentity, PemKeyPair>;
  /** The same on disk, per identity (the CA file is the deployment's CA for all of them). */
  files: Record<TestIdentity, TestTlsFiles>;
}

/** Names every test certificate is valid for as a server. */
const testDnsNames = ['localhost'];
const testIpAddresses = ['127.0.0.1', '::1'];

/**
 * The environment variable naming the folder test PKIs are made in: vitest's global setup sets
 * it for the run and removes the folder when the run ends; unset, the system's temporary folder.
 */
export const testPkiRootEnv = 'GATEWAY_TEST_PKI_ROOT';

/**
 * Creates a TestPki under `dir` (a fresh temporary directory when omitted). Takes a few
 * milliseconds per key (ECDSA P-256); create one per test file, in beforeAll.
 */
export async function createTestPki(dir?: string): Promise<TestPki> {
  const root = dir ?? await mkdtemp(join(process.env[testPkiRootEnv] ?? tmpdir(), 'gateway-pki-'));
  await mkdir(root, { recursive: true });
  const ca = await createCertificateAuthority('inr-gateway test CA');
  const otherCa = await createCertificateAuthority('inr-gateway test CA');
  const leaf = (commonName: string, uri?: string) => ({ commonName, uri, dnsNames: testDnsNames, ipAddresses: testIpAddresses });
  const identities = {} as Record<TestIdentity, PemKeyPair>;
  for (const role of serviceRoles) identities[role] = await issueCertificate(ca, leaf(role, identityUri(role)));
  // Same subject and identity URI as the real proxy, so only the chain tells them apart.
  identities.stranger = await issueCertificate(otherCa, leaf('proxy', identityUri('proxy')));
  identities.nobody = await issueCertificate(ca, leaf('nobody'));

  const caFile = join(root, 'ca.crt');
  await writeFile(caFile, ca.certPem);
  const files = {} as Record<TestIdentity, TestTlsFiles>;
  for (const [identity, pair] of Object.entries(identities) as Array<[TestIdentity, PemKeyPair]>) {
    const certFile = join(root, `${identity}.crt`);
    const keyFile = join(root, `${identity}.key`);
    await writeFile(certFile, pair.certPem);
    await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
    files[identity] = { caFile, certFile, keyFile };
  }
  return { dir: root, caPem: ca.certPem, identities, files };
}

/** The GRPC_TLS_* variables that give a service process `identity`'s certificate and the test CA. */
export function serviceTlsEnv(pki: TestPki, identity: TestIdentity): Record<string, string> {
  const files = pki.files[identity];
  return { GRPC_TLS_CA_FILE: files.caFile, GRPC_TLS_CERT_FILE: files.certFile, GRPC_TLS_KEY_FILE: files.keyFile };
}

/**
 * In-process transport security with `identity`'s certificate and the test CA: pass it to
 * channelCredentials() for a client, or to startGrpcServer() / a service config for a server.
 */
export function testTransportSecurity(pki: TestPki, identity: TestIdentity): GrpcTransportSecurity {
  const pair = pki.identities[identity];
  return {
    mode: 'mtls',
    certificates: fixedCertificates({ caPem: Buffer.from(pki.caPem), certPem: Buffer.from(pair.certPem), keyPem: Buffer.from(pair.keyPem) }),
  };
}

/** The process-wide TestPki, created on first use (tests of one worker share it). */
let shared: Promise<TestPki> | undefined;
let sharedCreated: TestPki | undefined;

/** One TestPki per test process, so every test ledger, admin and proxy in it trusts the same CA. */
export function sharedTestPki(): Promise<TestPki> {
  shared ??= createTestPki().then((pki) => { sharedCreated = pki; return pki; });
  return shared;
}

/**
 * The shared TestPki for synchronous helpers (e.g. a fake client made inside a sync function),
 * once some earlier step awaited sharedTestPki(); throws if none did.
 */
export function sharedTestPkiNow(): TestPki {
  if (!sharedCreated) throw new Error('await sharedTestPki() (or start a test service) before using sharedTestPkiNow()');
  return sharedCreated;
}
