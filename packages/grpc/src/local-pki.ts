import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { identityUri, serviceRoles, type ServiceRole } from './service-identity.ts';

// @peculiar/x509 signs through WebCrypto; Node's implementation is the one we trust.
x509.cryptoProvider.set(webcrypto as unknown as ReturnType<typeof x509.cryptoProvider.get>);

/** ECDSA P-256 with SHA-256: small keys, fast handshakes, accepted by every TLS stack we use. */
const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;

/** One day in milliseconds. */
const dayMs = 86_400_000;

/** A certificate and its private key, both PEM (the key PKCS#8). */
export interface PemKeyPair {
  certPem: string;
  keyPem: string;
}

/** What a leaf certificate names: its identity URI (if any) and the addresses peers dial. */
export interface LeafCertificateRequest {
  /** Subject common name (informational; identity is read from the URI SAN). */
  commonName: string;
  /** URI SAN carrying the caller identity, e.g. spiffe://inr-gateway/proxy; omitted for a cert with no role. */
  uri?: string;
  /** DNS SANs the certificate is valid for as a server. */
  dnsNames?: readonly string[];
  /** IP SANs the certificate is valid for as a server. */
  ipAddresses?: readonly string[];
  /** Lifetime, days. */
  validityDays?: number;
}

/** Encodes a key as PKCS#8 PEM. */
async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Reads a PKCS#8 PEM ECDSA P-256 key back for signing. */
async function importSigningKey(keyPem: string): Promise<webcrypto.CryptoKey> {
  const der = x509.PemConverter.decode(keyPem)[0]!;
  return await webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
}

/** A fresh ECDSA P-256 key pair. */
async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify']);
}

/** Quotes a value for an X.500 name string (RFC 4514 escaping of the few special characters). */
function rdn(value: string): string {
  return value.replace(/[,+"\\<>;=]/g, (c) => `\\${c}`);
}

/** Creates a self-signed CA (may sign leaf certificates only: path length 0) valid for validityDays. */
export async function createCertificateAuthority(commonName: string, validityDays = 3650): Promise<PemKeyPair> {
  const keys = await generateKeys();
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${rdn(commonName)}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + validityDays * dayMs),
    keys,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/**
 * Issues a leaf certificate signed by `ca`, usable both as a TLS server certificate and as a
 * client certificate (serverAuth + clientAuth), because each service uses one cert for both.
 */
export async function issueCertificate(ca: PemKeyPair, request: LeafCertificateRequest): Promise<PemKeyPair> {
  const keys = await generateKeys();
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importSigningKey(ca.keyPem);
  const now = Date.now();
  const names: x509.JsonGeneralName[] = [
    ...(request.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(request.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
    ...(request.uri ? [{ type: 'url' as const, value: request.uri }] : []),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${rdn(request.commonName)}`,
    issuer: caCert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + (request.validityDays ?? 365) * dayMs),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** When a PEM certificate stops being valid. */
export function certificateNotAfter(certPem: string): Date {
  return new x509.X509Certificate(certPem).notAfter;
}

/** PEM file paths of one service's credentials, as the GRPC_TLS_* variables name them. */
export interface ServiceTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** A CA and one certificate per service on disk, as `pnpm start` uses them. */
export interface LocalPki {
  /** The directory holding everything. */
  dir: string;
  /** Files of each service's credentials (the CA file is shared). */
  files: Record<ServiceRole, ServiceTlsFiles>;
}

/** Options of ensureLocalPki. */
export interface LocalPkiOptions {
  /** DNS SANs of every service certificate (the names peers dial); default localhost. */
  dnsNames?: readonly string[];
  /** IP SANs of every service certificate; default 127.0.0.1 and ::1. */
  ipAddresses?: readonly string[];
  /** A certificate expiring within this many days is issued again; default 30. */
  renewWithinDays?: number;
}

/** Reads a file, or undefined when it does not exist. */
async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Writes a PEM pair; the private key is readable by its owner only (0600). */
async function writePair(dir: string, name: string, pair: PemKeyPair): Promise<void> {
  await writeFile(join(dir, `${name}.key`), pair.keyPem, { mode: 0o600 });
  await chmod(join(dir, `${name}.key`), 0o600);
  await writeFile(join(dir, `${name}.crt`), pair.certPem, { mode: 0o644 });
}

/** Reads a PEM pair written by writePair, or undefined if either file is missing. */
async function readPair(dir: string, name: string): Promise<PemKeyPair | undefined> {
  const [certPem, keyPem] = await Promise.all([readIfPresent(join(dir, `${name}.crt`)), readIfPresent(join(dir, `${name}.key`))]);
  return certPem && keyPem ? { certPem, keyPem } : undefined;
}

/** True when the certificate is still valid renewWithinDays from now. */
function validLongEnough(certPem: string, renewWithinDays: number): boolean {
  return certificateNotAfter(certPem).getTime() > Date.now() + renewWithinDays * dayMs;
}

/**
 * Makes sure `dir` holds a local CA (ca.crt, ca.key) and one certificate per service
 * (<role>.crt, <role>.key, identity URI spiffe://inr-gateway/<role>): creates what is missing,
 * reuses what is there, and issues again a certificate that expires within renewWithinDays (or
 * that a new CA no longer signs). Private keys are mode 0600. For single-machine runs only.
 */
export async function ensureLocalPki(dir: string, options: LocalPkiOptions = {}): Promise<LocalPki> {
  const renewWithinDays = options.renewWithinDays ?? 30;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let ca = await readPair(dir, 'ca');
  let caIsNew = false;
  if (!ca || !validLongEnough(ca.certPem, renewWithinDays)) {
    ca = await createCertificateAuthority('inr-gateway local CA');
    await writePair(dir, 'ca', ca);
    caIsNew = true;
  }
  const files = {} as Record<ServiceRole, ServiceTlsFiles>;
  for (const role of serviceRoles) {
    const existing = await readPair(dir, role);
    if (caIsNew || !existing || !validLongEnough(existing.certPem, renewWithinDays)) {
      await writePair(dir, role, await issueCertificate(ca, {
        commonName: role,
        uri: identityUri(role),
        dnsNames: options.dnsNames ?? ['localhost'],
        ipAddresses: options.ipAddresses ?? ['127.0.0.1', '::1'],
      }));
    }
    files[role] = { caFile: join(dir, 'ca.crt'), certFile: join(dir, `${role}.crt`), keyFile: join(dir, `${role}.key`) };
  }
  return { dir, files };
}
