import type { PeerCertificate } from 'node:tls';
import type {
  ServerDuplexStream, ServerReadableStream, ServerUnaryCall, ServerWritableStream, ServiceDefinition,
  UntypedHandleCall, UntypedServiceImplementation, sendUnaryData,
} from '@grpc/grpc-js';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { reportCallFailure } from './call-failure.ts';

/** The roles a service certificate can carry; the identity of every internal gRPC caller. */
export const serviceRoles = ['proxy', 'admin', 'ledger'] as const;

/** One service's role: who is calling. */
export type ServiceRole = (typeof serviceRoles)[number];

/** The trust domain of the identity URIs (SPIFFE style). */
export const identityTrustDomain = 'inr-gateway';

/** The URI SAN a role's certificate carries: spiffe://inr-gateway/<role>. */
export function identityUri(role: ServiceRole): string {
  return `spiffe://${identityTrustDomain}/${role}`;
}

/**
 * The role named by a peer certificate's URI SANs, or undefined when it names none or names
 * more than one (an ambiguous certificate is no identity at all). The chain was already
 * verified against the deployment's CA by the TLS handshake; this reads only what it says.
 */
export function roleOfCertificate(certificate: Pick<PeerCertificate, 'subjectaltname'> | undefined): ServiceRole | undefined {
  const sans = certificate?.subjectaltname;
  if (!sans) return undefined;
  const roles = new Set<ServiceRole>();
  // Node renders SANs as `DNS:a, IP Address:1.2.3.4, URI:spiffe://…`; values may be quoted JSON strings.
  for (const entry of sans.split(/,\s*/)) {
    if (!entry.startsWith('URI:')) continue;
    let uri = entry.slice(4);
    if (uri.startsWith('"')) {
      try { uri = JSON.parse(uri) as string; } catch { continue; }
    }
    const role = serviceRoles.find((candidate) => identityUri(candidate) === uri);
    if (role) roles.add(role);
  }
  return roles.size === 1 ? [...roles][0] : undefined;
}

/** The part of a server call authorization reads. */
interface CallWithAuthContext {
  getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate } | null;
}

/** The role of the caller of a server call, from its verified client certificate; undefined without one. */
export function callerRole(call: CallWithAuthContext): ServiceRole | undefined {
  const context = call.getAuthContext();
  if (context?.transportSecurityType !== 'ssl') return undefined;
  return roleOfCertificate(context.sslPeerCertificate);
}

/** For each method of a service (ts-proto's method names), the roles allowed to call it. */
export type MethodRoles<Methods extends string = string> = { readonly [Method in Methods]: readonly ServiceRole[] };

/** How a service checks its callers. */
export interface AuthorizationOptions {
  logger: Logger;
  /** False only under GRPC_INSECURE=true, where no caller has an identity and every call is let in. */
  enforce: boolean;
}

/**
 * The decision for one call: undefined to let it in, or the error to answer with. A method
 * missing from the table is refused (deny by default).
 */
export function authorizationError(
  table: Partial<Record<string, readonly ServiceRole[]>>, method: string, role: ServiceRole | undefined,
): GatewayError | undefined {
  if (role === undefined) {
    return new GatewayError('unauthenticated', {
      publicMessage: 'The caller presented no service identity.',
      internalMessage: `no service identity on a call to ${method}`,
    });
  }
  const allowed = Object.hasOwn(table, method) ? table[method] : undefined;
  if (allowed?.includes(role)) return undefined;
  return new GatewayError('permission_denied', {
    publicMessage: 'This service identity may not call this method.',
    internalMessage: `${role} may not call ${method}`,
  });
}

/**
 * Wraps every method of a service implementation with the identity check of `table`, which
 * runs before the handler for unary calls and streams alike. Refusals go through the one gRPC
 * error mapping (reportCallFailure): UNAUTHENTICATED without an identity, PERMISSION_DENIED for
 * a role the table does not allow. Methods of the definition the table does not name are
 * refused too; the table is typed by the definition so a new method cannot be forgotten.
 */
export function authorizeService<Definition extends ServiceDefinition, Implementation extends UntypedServiceImplementation>(
  definition: Definition,
  implementation: Implementation,
  table: MethodRoles<Extract<keyof Definition, string>>,
  options: AuthorizationOptions,
): Implementation {
  if (!options.enforce) return implementation;
  const wrapped: UntypedServiceImplementation = {};
  for (const [method, attributes] of Object.entries(definition as ServiceDefinition)) {
    const handler = implementation[method] as UntypedHandleCall | undefined;
    if (!handler) continue;
    const fullName = attributes.path;
    const refusal = (call: CallWithAuthContext) => {
      const error = authorizationError(table, method, callerRole(call));
      return error ? reportCallFailure(options.logger, fullName, error).status : undefined;
    };
    if (!attributes.requestStream && !attributes.responseStream) {
      wrapped[method] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        const status = refusal(call);
        if (status) callback(status);
        else (handler as (c: typeof call, cb: typeof callback) => void)(call, callback);
      };
    } else if (attributes.requestStream && !attributes.responseStream) {
      wrapped[method] = (call: ServerReadableStream<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        const status = refusal(call);
        if (status) callback(status);
        else (handler as (c: typeof call, cb: typeof callback) => void)(call, callback);
      };
    } else {
      wrapped[method] = (call: ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>) => {
        const status = refusal(call);
        // grpc-js ends a streaming call with the status of an 'error' it emits.
        if (status) call.emit('error', status);
        else (handler as (c: typeof call) => void)(call);
      };
    }
  }
  return wrapped as Implementation;
}
