/**
 * A raw gRPC client of the ledger for the fault suite's identity checks: it calls
 * `LedgerService/Credit` as an attacker would, with no identity or with a proxy's. It loads
 * grpc-js and the generated contracts through the ledger package's own dependencies, so the
 * probe speaks exactly the ledger's protocol without the root workspace depending on them.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const ledgerRequire = createRequire(new URL('../../../services/ledger/package.json', import.meta.url));

/** The parts of @grpc/grpc-js the probe uses. */
interface GrpcLike {
  credentials: {
    createInsecure(): unknown;
    createSsl(rootCerts?: Buffer | null, privateKey?: Buffer | null, certChain?: Buffer | null): unknown;
  };
}

/** The parts of the generated LedgerServiceClient the probe uses. */
interface LedgerClientLike {
  credit(request: unknown, metadata: unknown, options: { deadline: Date }, callback: (error: { code: number; details: string } | null, response?: { result: number }) => void): void;
  close(): void;
}

/** The gRPC status codes the identity checks expect (grpc-js's numbering). */
export const grpcStatus = { permissionDenied: 7, unavailable: 14, unauthenticated: 16 } as const;

/** How a probe call went: OK (the ledger did as told) or the gRPC status it was refused with. */
export interface ProbeOutcome {
  ok: boolean;
  /** gRPC status code (0 on OK). */
  code: number;
  details: string;
}

/** Which credentials the probe presents. */
export type ProbeIdentity =
  | { kind: 'plaintext' }
  /** TLS that trusts the deployment's CA but presents no client certificate. */
  | { kind: 'tls-without-certificate'; caFile: string }
  /** A full service identity (mTLS), e.g. the proxy's certificate. */
  | { kind: 'certificate'; caFile: string; certFile: string; keyFile: string };

/** Calls LedgerService/Credit for `amountMicros` on the organisation with the given identity. */
export async function probeCredit(address: string, identity: ProbeIdentity, organisationId: string, amountMicros: bigint): Promise<ProbeOutcome> {
  const grpc = ledgerRequire('@grpc/grpc-js') as GrpcLike;
  const contracts = await import(pathToFileURL(ledgerRequire.resolve('@gateway/contracts')).href) as {
    ledgerV1: { LedgerServiceClient: new (address: string, credentials: unknown, options?: Record<string, unknown>) => LedgerClientLike };
  };
  const credentials = identity.kind === 'plaintext' ? grpc.credentials.createInsecure()
    : identity.kind === 'tls-without-certificate' ? grpc.credentials.createSsl(readFileSync(identity.caFile))
      : grpc.credentials.createSsl(readFileSync(identity.caFile), readFileSync(identity.keyFile), readFileSync(identity.certFile));
  const client = new contracts.ledgerV1.LedgerServiceClient(address, credentials);
  try {
    return await new Promise<ProbeOutcome>((resolve) => {
      const request = { creditId: `fault-probe-${identity.kind}-${Date.now()}`, organisationId, amountMicros, reason: 'fault suite: unauthorised credit attempt' };
      const { Metadata } = ledgerRequire('@grpc/grpc-js') as { Metadata: new () => unknown };
      client.credit(request, new Metadata(), { deadline: new Date(Date.now() + 5_000) }, (error) => {
        resolve(error === null ? { ok: true, code: 0, details: 'OK' } : { ok: false, code: error.code, details: error.details });
      });
    });
  } finally {
    client.close();
  }
}
