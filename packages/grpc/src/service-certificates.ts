import { X509Certificate, createPrivateKey } from 'node:crypto';
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { experimental } from '@grpc/grpc-js';
import type { Logger } from '@gateway/logger';

/** grpc-js's certificate-provider interface: its credentials ask it for every new TLS handshake's certificates. */
type CertificateProvider = experimental.CertificateProvider;
type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

/** The three PEMs of a service's identity: the trust bundle, its certificate (chain) and its key. */
export interface ServicePems {
  caPem: Buffer;
  certPem: Buffer;
  keyPem: Buffer;
}

/** What is loaded now, with the expiries the metrics export. */
export interface LoadedCertificates extends ServicePems {
  /** When the service's own certificate (the chain's first) stops being valid. */
  certNotAfter: Date;
  /** When the first certificate of the trust bundle to expire stops being valid. */
  caNotAfter: Date;
  /** SHA-256 fingerprint of the service's certificate (colon-separated hex), to log which one is in use. */
  certFingerprint: string;
}

/**
 * A service's certificates as grpc-js credentials use them (a CertificateProvider: servers and
 * channels built on it take the latest certificates for each new connection; established ones
 * keep theirs), plus what the metrics and logs read.
 */
export interface ServiceCertificates extends CertificateProvider {
  /** The certificates in use now. */
  current(): LoadedCertificates;
  /** Stops watching the files (idempotent); the certificates stay in use. */
  close(): void;
}

/** The PEM blocks of a bundle, each a whole `-----BEGIN CERTIFICATE-----` block. */
function certificateBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * Checks that three PEMs make a usable identity and reads their expiries: the key belongs to the
 * certificate and Node's TLS accepts all three. Throws with a message naming the problem, never
 * the contents.
 */
export function inspectCertificates(pems: ServicePems): LoadedCertificates {
  const certBlocks = certificateBlocks(pems.certPem.toString('utf8'));
  const caBlocks = certificateBlocks(pems.caPem.toString('utf8'));
  if (certBlocks.length === 0) throw new Error('the certificate file holds no PEM certificate');
  if (caBlocks.length === 0) throw new Error('the CA file holds no PEM certificate');
  const leaf = new X509Certificate(certBlocks[0]!);
  // A certificate and a key from two different renewals (read across a swap) must never be served.
  if (!leaf.checkPrivateKey(createPrivateKey(pems.keyPem))) throw new Error('the private key does not belong to the certificate');
  createSecureContext({ ca: pems.caPem, cert: pems.certPem, key: pems.keyPem });
  const caNotAfterMs = Math.min(...caBlocks.map((block) => new X509Certificate(block).validToDate.getTime()));
  return { ...pems, certNotAfter: leaf.validToDate, caNotAfter: new Date(caNotAfterMs), certFingerprint: leaf.fingerprint256 };
}

/** True when two loads hold the same bytes. */
function samePems(a: ServicePems, b: ServicePems): boolean {
  return a.caPem.equals(b.caPem) && a.certPem.equals(b.certPem) && a.keyPem.equals(b.keyPem);
}

/**
 * Holds the current certificates and tells grpc-js's listeners when they change. Only checked
 * certificates are ever handed on: grpc-js answers a failed update by refusing every new
 * connection, so a bad file keeps the last good certificates in use instead.
 */
class CertificateHolder implements ServiceCertificates {
  #current: LoadedCertificates;
  readonly #caListeners = new Set<CaListener>();
  readonly #identityListeners = new Set<IdentityListener>();

  readonly #onClose: () => void;

  constructor(initial: LoadedCertificates, onClose: () => void = () => {}) {
    this.#current = initial;
    this.#onClose = onClose;
  }

  current(): LoadedCertificates {
    return this.#current;
  }

  /** Puts checked certificates in use; true when they differ from the ones in use. */
  replace(next: LoadedCertificates): boolean {
    if (samePems(next, this.#current)) return false;
    this.#current = next;
    // Identity first: each intermediate state (new pair, old bundle) is itself a valid context.
    for (const listener of this.#identityListeners) listener({ certificate: next.certPem, privateKey: next.keyPem });
    for (const listener of this.#caListeners) listener({ caCertificate: next.caPem });
    return true;
  }

  addCaCertificateListener(listener: CaListener): void {
    this.#caListeners.add(listener);
    process.nextTick(listener, { caCertificate: this.#current.caPem });
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.#caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.#identityListeners.add(listener);
    process.nextTick(listener, { certificate: this.#current.certPem, privateKey: this.#current.keyPem });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.#identityListeners.delete(listener);
  }

  close(): void {
    this.#onClose();
  }
}

/** Certificates that never change (tests, in-memory identities). Throws if they are not a usable identity. */
export function fixedCertificates(pems: ServicePems): ServiceCertificates {
  return new CertificateHolder(inspectCertificates(pems));
}

/** The three files of a service's identity, as GRPC_TLS_CA_FILE, GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE name them. */
export interface CertificateFilePaths {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** Options of watchCertificateFiles. */
export interface WatchCertificateFilesOptions {
  logger: Logger;
  /**
   * How often the files are read again whatever the watcher reported, ms: fs.watch misses events
   * on some filesystems (network and overlay mounts). Default defaultCertificatePollIntervalMs.
   */
  pollIntervalMs?: number;
  /** Called after each reload that put new certificates in use (logs and tests). */
  onReload?: (loaded: LoadedCertificates) => void;
}

/** Default of pollIntervalMs: a renewal lands 30 days before expiry, so a minute late costs nothing. */
export const defaultCertificatePollIntervalMs = 60_000;

/** Reads one PEM file named by a variable; the error names the variable and the path, never the contents. */
function readPemSync(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, { cause: error });
  }
}

/**
 * Reads a service's certificate files now (throwing, with the variable's name, if one is missing
 * or they do not make an identity: a bad start fails at once) and keeps them current: the
 * directories holding them are watched, and read again on any change there, with a poll as a
 * backstop. Kubernetes updates a mounted Secret by swapping the `..data` symlink of its
 * directory, never the files in place, so the directory is what is watched. A reload that reads
 * files which do not belong together (a certificate from one renewal, a key from the next) or
 * cannot be read is logged and skipped; the next event or poll tries again.
 */
export function watchCertificateFiles(paths: CertificateFilePaths, options: WatchCertificateFilesOptions): ServiceCertificates {
  const { logger } = options;
  let initial: LoadedCertificates;
  try {
    initial = inspectCertificates({
      caPem: readPemSync('GRPC_TLS_CA_FILE', paths.caFile),
      certPem: readPemSync('GRPC_TLS_CERT_FILE', paths.certFile),
      keyPem: readPemSync('GRPC_TLS_KEY_FILE', paths.keyFile),
    });
  } catch (error) {
    if ((error as Error).message.startsWith('GRPC_TLS_')) throw error;
    throw new Error(`GRPC_TLS_CA_FILE, GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: ${(error as Error).message}`, { cause: error });
  }
  let closed = false;
  const watchers = new Map<string, FSWatcher>();
  let poll: NodeJS.Timeout | undefined;
  const holder = new CertificateHolder(initial, () => {
    closed = true;
    clearInterval(poll);
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  });
  logger.info({ fingerprint: initial.certFingerprint, notAfter: initial.certNotAfter.toISOString() }, 'service certificate loaded');

  // One read at a time; an event during a read asks for one more read after it.
  let reading: Promise<void> | undefined;
  let again = false;
  const readOnce = async () => {
    try {
      const [caPem, certPem, keyPem] = await Promise.all([readFile(paths.caFile), readFile(paths.certFile), readFile(paths.keyFile)]);
      if (closed) return;
      const loaded = inspectCertificates({ caPem, certPem, keyPem });
      if (holder.replace(loaded)) {
        logger.info({ fingerprint: loaded.certFingerprint, notAfter: loaded.certNotAfter.toISOString() }, 'service certificate reloaded');
        options.onReload?.(loaded);
      }
    } catch (error) {
      logger.warn({ reason: (error as Error).message }, 'service certificate files not reloaded; the certificates in use stay');
    }
  };
  const reload = () => {
    if (closed) return;
    if (reading) { again = true; return; }
    reading = readOnce().finally(() => {
      reading = undefined;
      if (again) { again = false; reload(); }
    });
  };

  const watchDirectories = () => {
    for (const directory of new Set([paths.caFile, paths.certFile, paths.keyFile].map((path) => dirname(path)))) {
      if (watchers.has(directory)) continue;
      try {
        const watcher = watch(directory, { persistent: false }, reload);
        // A watch that breaks (the directory removed) is dropped; the poll watches again.
        watcher.on('error', () => { watcher.close(); watchers.delete(directory); });
        watchers.set(directory, watcher);
      } catch (error) {
        logger.warn({ directory, reason: (error as NodeJS.ErrnoException).code ?? 'error' }, 'cannot watch the certificate directory; polling only');
      }
    }
  };
  watchDirectories();
  poll = setInterval(() => { watchDirectories(); reload(); }, options.pollIntervalMs ?? defaultCertificatePollIntervalMs);
  poll.unref();
  return holder;
}
