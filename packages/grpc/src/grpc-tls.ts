import { ServerCredentials, credentials, experimental, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { z } from '@gateway/config';
import type { Logger } from '@gateway/logger';
import { watchCertificateFiles, type ServiceCertificates } from './service-certificates.ts';

/**
 * How a service's internal gRPC is secured: mutual TLS with the deployment's CA (the default
 * and the only production mode), or plaintext with no caller identity (GRPC_INSECURE=true,
 * development only).
 */
export type GrpcTransportSecurity =
  | { mode: 'mtls'; certificates: ServiceCertificates }
  | { mode: 'insecure' };

/**
 * The environment variables of service identity, the same in every service: spread into its
 * zod schema, and add `checkGrpcTlsEnv` as a refinement of the whole object.
 */
export const grpcTlsEnv = {
  /** PEM file of the CA that signs every service certificate (peers are verified against it). */
  GRPC_TLS_CA_FILE: z.string().min(1).optional(),
  /** PEM file of this service's certificate, used as server and as client certificate. */
  GRPC_TLS_CERT_FILE: z.string().min(1).optional(),
  /** PEM file of this service's private key. */
  GRPC_TLS_KEY_FILE: z.string().min(1).optional(),
  /** `true` runs internal gRPC in plaintext with no identities: development only, logged loudly. */
  GRPC_INSECURE: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
};

/** The service-identity part of a parsed configuration. */
export interface GrpcTlsConfig {
  GRPC_TLS_CA_FILE?: string | undefined;
  GRPC_TLS_CERT_FILE?: string | undefined;
  GRPC_TLS_KEY_FILE?: string | undefined;
  GRPC_INSECURE: boolean;
}

/** The variables carrying certificate files, in the order problems are reported. */
const tlsFileVariables = ['GRPC_TLS_CA_FILE', 'GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE'] as const;

/**
 * Cross-field rule of the service-identity variables: either all three certificate files or
 * GRPC_INSECURE=true, never neither and never both. Use with zod's superRefine.
 */
export function checkGrpcTlsEnv(value: GrpcTlsConfig, ctx: z.RefinementCtx): void {
  const given = tlsFileVariables.filter((variable) => value[variable] !== undefined);
  if (value.GRPC_INSECURE) {
    if (given.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['GRPC_INSECURE'], message: `must not be true when certificate files are set (${given.join(', ')})` });
    }
    return;
  }
  if (given.length === 0) {
    ctx.addIssue({
      code: 'custom', path: ['GRPC_TLS_CERT_FILE'],
      message: 'internal gRPC needs mTLS: set GRPC_TLS_CA_FILE, GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE, or GRPC_INSECURE=true for plaintext in development',
    });
    return;
  }
  for (const variable of tlsFileVariables) {
    if (value[variable] === undefined) {
      ctx.addIssue({ code: 'custom', path: [variable], message: `is required with ${given.join(', ')} (mTLS needs the CA, the certificate and its key)` });
    }
  }
}

/**
 * Turns a validated configuration into the transport security of the service: reads the
 * certificate files at start (a missing or mismatched file fails the start) and keeps reading
 * them when they change, so a renewed certificate is used by new connections without a restart
 * (watchCertificateFiles; stop it with closeTransportSecurity). Or (GRPC_INSECURE=true) logs at
 * error level, on every start, that internal gRPC is unauthenticated plaintext.
 */
export function grpcTransportSecurity(config: GrpcTlsConfig, logger: Logger): GrpcTransportSecurity {
  if (config.GRPC_INSECURE) {
    logger.error(
      { setting: 'GRPC_INSECURE=true' },
      'INTERNAL gRPC IS PLAINTEXT AND UNAUTHENTICATED: anyone who reaches its ports can call every method (credit money, read upstream keys). Development only; set GRPC_TLS_CA_FILE, GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE.',
    );
    return { mode: 'insecure' };
  }
  const { GRPC_TLS_CA_FILE: caFile, GRPC_TLS_CERT_FILE: certFile, GRPC_TLS_KEY_FILE: keyFile } = config;
  if (!caFile || !certFile || !keyFile) {
    throw new Error('GRPC_TLS_CA_FILE, GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE are required unless GRPC_INSECURE=true');
  }
  return { mode: 'mtls', certificates: watchCertificateFiles({ caFile, certFile, keyFile }, { logger }) };
}

/** Stops watching the certificate files of a transport security (at shutdown); a no-op under GRPC_INSECURE. */
export function closeTransportSecurity(security: GrpcTransportSecurity): void {
  if (security.mode === 'mtls') security.certificates.close();
}

/**
 * Server credentials: under mTLS a client certificate signed by the CA is REQUIRED to connect.
 * Built on grpc-js's certificate-provider API, so each new connection is served the certificates
 * loaded at that moment (the server's secure context is replaced on a reload; open connections
 * keep the one they were made with).
 */
export function serverCredentials(security: GrpcTransportSecurity): ServerCredentials {
  if (security.mode === 'insecure') return ServerCredentials.createInsecure();
  // One provider serves both roles: grpc-js 1.14.7's factory hands its first argument to the
  // identity slot whatever its name says, which only a single provider makes moot.
  return experimental.createCertificateProviderServerCredentials(security.certificates, security.certificates, true);
}

/**
 * Channel credentials of a caller: presents its own certificate and verifies the server's
 * against the CA, both as loaded when each new connection is made, so a channel kept for the
 * process's life reconnects with renewed certificates.
 */
export function channelCredentials(security: GrpcTransportSecurity): ChannelCredentials {
  if (security.mode === 'insecure') return credentials.createInsecure();
  return experimental.createCertificateProviderChannelCredentials(security.certificates, security.certificates);
}

/** Which use of a certificate a metric series reports: the bounded `certificate` label of gateway_tls_certificate_expiry_timestamp_seconds. */
export type CertificateUse = 'serving' | 'client' | 'ca';

/**
 * The expiry, seconds since the epoch, of each certificate the service uses: its own
 * certificate once per use it makes of it (`serving` for a gRPC server, `client` for channels),
 * and the trust bundle's first to expire (`ca`). Empty under GRPC_INSECURE.
 */
export function certificateExpiries(
  security: GrpcTransportSecurity, uses: ReadonlyArray<Exclude<CertificateUse, 'ca'>>,
): Array<{ certificate: CertificateUse; notAfterSeconds: number }> {
  if (security.mode === 'insecure') return [];
  const loaded = security.certificates.current();
  return [
    ...uses.map((certificate) => ({ certificate, notAfterSeconds: loaded.certNotAfter.getTime() / 1000 })),
    { certificate: 'ca' as const, notAfterSeconds: loaded.caNotAfter.getTime() / 1000 },
  ];
}

/** The part of a prom-client gauge (gateway_tls_certificate_expiry_timestamp_seconds) the expiries are set on. */
export interface CertificateExpiryGauge {
  set(labels: { certificate: CertificateUse }, value: number): void;
}

/**
 * A scrape-time refresh (register it with the service metrics' onCollect) that sets the gauge
 * from the certificates in use then, so a reload shows at the next scrape.
 */
export function certificateExpiryRefresh(
  security: GrpcTransportSecurity, uses: ReadonlyArray<Exclude<CertificateUse, 'ca'>>, gauge: CertificateExpiryGauge,
): () => void {
  return () => {
    for (const { certificate, notAfterSeconds } of certificateExpiries(security, uses)) gauge.set({ certificate }, notAfterSeconds);
  };
}

/**
 * Options of every internal client channel (proxy -> admin, proxy -> ledger, admin -> ledger).
 * grpc-js's default reconnect backoff grows to 120 s, so a peer back after an outage was found
 * only 6-21 s later; capped at 2 s it is found within about 2 s. Keepalive pings every 10 s
 * notice a dead peer (a node gone without a FIN) within 15 s instead of the kernel's minutes.
 */
export const clientChannelOptions: ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
};

/**
 * Options of every internal gRPC server, matching clientChannelOptions: it accepts a ping every
 * 5 s even with no call open (else it answers the clients' 10 s pings with GOAWAY
 * too_many_pings), and pings idle clients itself so half-open connections are closed.
 */
export const serverOptions: ChannelOptions = {
  'grpc.http2.min_ping_interval_without_data_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
};
