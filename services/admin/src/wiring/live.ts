import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import type { Database } from '@gateway/db';
import { GatewayError, toHttpError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import { canSeeOrganisation, type Actor } from '../common/domain/actor.ts';
import { isId } from '../common/domain/ids.ts';
import type { LedgerPort } from '../common/domain/ledger-port.ts';
import type { LiveEvents } from '../common/domain/live-events.ts';
import { sameOriginRequest } from '../people/http/session-cookie.ts';
import { createOrganisationWatches, type LiveLedgerMessage } from '../alerts/domain/live-watches.ts';
import { organisationExists } from '../tenancy/domain/organisation-store.ts';
import { requireAccess, type Authentication, type RequestCredentials } from '../common/http/admin-http-app.ts';
import type { RouteAccess } from '../common/http/route-definition.ts';
import { balanceJson } from '../billing/http/balance-views.ts';
import { usageRecordJson } from '../platform/http/platform-views.ts';

/** What the live updates need. */
export interface LiveUpdatesDeps {
  server: Server;
  db: Database;
  ledger: LedgerPort;
  liveEvents: LiveEvents;
  config: AdminConfig;
  logger: Logger;
  authenticate(credentials: RequestCredentials): Promise<Authentication | undefined>;
  /** How often each connection's credentials are checked again, ms (default 30 s): a revoked session or token is closed with 4401. */
  recheckMs?: number;
  /** How often each connection is pinged, ms (default 15 s); one that has not answered the previous ping is ended. */
  pingMs?: number;
}

/** The WebSocket path of the live updates. */
const livePath = '/admin/v1/live';

/**
 * Who may watch an organisation live, declared as a route's access is and enforced by the same
 * rule (requireAccess): the organisation named by `organisation_id`, with at least the viewer role.
 */
const liveAccess: RouteAccess = { access: 'organisation', scope: 'organisation_id', role: 'viewer' };

/** Whether the actor may still watch the organisation: it still sees it, with liveAccess's role there. */
function mayWatch(actor: Actor, organisationId: string): boolean {
  if (!canSeeOrganisation(actor, organisationId)) return false;
  try {
    requireAccess(liveAccess, actor, organisationId);
    return true;
  } catch {
    return false;
  }
}

/** Close codes: the server goes away (RFC 6455), the credentials ended, the organisation is no longer the caller's. */
const closeCodes = { goingAway: 1001, unauthenticated: 4401, forbidden: 4403 } as const;

/** Past this many bytes waiting to be sent, a client is too slow to follow and is ended. */
const maxBufferedBytes = 1024 * 1024;

/** How long close() waits for clients to answer the close handshake before ending them, ms. */
const closeHandshakeMs = 1_000;

/** One open connection: who it is, what it watches, and how to stop. */
interface LiveClient {
  socket: WebSocket;
  organisationId: string;
  credentials: RequestCredentials;
  alive: boolean;
  stop(): void;
}

/** A header's single value (the first, if repeated). */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Answers an upgrade request with an error in the catalogue's shape, then ends the socket (no WebSocket). */
function refuseUpgrade(socket: Duplex, error: GatewayError): void {
  const { status, body, headers } = toHttpError(error);
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (socket.writable) socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
  socket.destroy();
}

/**
 * Whether a browser's WebSocket comes from the dashboard's own origin: a session's must, and must
 * say so (browsers always send Origin on a WebSocket; see cross-site WebSocket hijacking).
 */
function sameOrigin(request: IncomingMessage): boolean {
  const origin = headerValue(request.headers.origin);
  return origin !== undefined && sameOriginRequest(origin, request.headers.host ?? '');
}

/** The message a ledger change becomes on the wire (the JSON views the API uses). */
function ledgerMessageJson(message: LiveLedgerMessage) {
  if (message.type === 'balance') return { type: 'balance', balance: balanceJson(message.balance) };
  return { type: 'usage', records: message.records.map(usageRecordJson) };
}

/**
 * Serves the dashboard's WebSocket on the admin's HTTP server: `GET /admin/v1/live?organisation_id=…`
 * upgraded after the same checks as the API (a bearer token, or a session cookie whose Origin is
 * this host; the organisation visible, and liveAccess's role there). Each connection is told the
 * organisation's balance and newest usage when they change (one shared ledger poll per watched
 * organisation, every LIVE_POLL_MS) and its alerts as they are raised; pinged to find dead peers;
 * its credentials re-checked so an ended session or revoked token closes it (4401).
 */
export function attachLiveUpdates(deps: LiveUpdatesDeps): { close(): Promise<void> } {
  const { server, db, ledger, liveEvents, config, logger } = deps;
  // Clients send nothing the server reads; a small limit keeps a hostile frame from costing memory.
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 });
  const clients = new Set<LiveClient>();
  const failingOrganisations = new Set<string>();
  const watches = createOrganisationWatches({
    ledger,
    pollMs: config.LIVE_POLL_MS,
    onPollError(organisationId, error) {
      // Once per failure streak: a ledger that is down must not flood the log every LIVE_POLL_MS.
      if (failingOrganisations.has(organisationId)) return;
      failingOrganisations.add(organisationId);
      logger.warn({ organisationId, err: error }, 'live updates: ledger poll failed');
    },
  });
  let closing = false;

  function send(client: LiveClient, message: unknown): void {
    if (client.socket.readyState !== WebSocket.OPEN) return;
    if (client.socket.bufferedAmount > maxBufferedBytes) {
      client.socket.terminate();
      return;
    }
    client.socket.send(JSON.stringify(message));
  }

  /** Who may open the connection, or the error to answer with. */
  async function admit(request: IncomingMessage): Promise<{ actor: Actor; organisationId: string; credentials: RequestCredentials }> {
    const credentials: RequestCredentials = {
      authorization: headerValue(request.headers.authorization),
      cookieHeader: headerValue(request.headers.cookie) ?? '',
      csrfToken: undefined,
    };
    const authentication = await deps.authenticate(credentials);
    if (authentication === undefined) {
      throw new GatewayError('unauthenticated', { publicMessage: 'Missing or invalid credentials. Send Authorization: Bearer gwadm_…, or sign in to the dashboard.' });
    }
    if (authentication.via === 'session' && !sameOrigin(request)) {
      throw new GatewayError('permission_denied', { publicMessage: 'Cross-origin WebSocket refused: Origin must be this host.' });
    }
    const organisationId = new URL(request.url ?? '/', 'http://admin').searchParams.get('organisation_id') ?? '';
    if (organisationId === '') {
      throw new GatewayError('invalid_request', { publicMessage: 'organisation_id: is required', param: 'organisation_id' });
    }
    if (!isId('organisation', organisationId) || !canSeeOrganisation(authentication.actor, organisationId) || !await organisationExists(db, organisationId)) {
      throw new GatewayError('not_found', {
        publicMessage: isId('organisation', organisationId) ? `No organisation has the id "${organisationId}".` : 'No organisation has this id.',
        param: 'organisation_id',
      });
    }
    requireAccess(liveAccess, authentication.actor, organisationId);
    return { actor: authentication.actor, organisationId, credentials };
  }

  function open(socket: WebSocket, organisationId: string, credentials: RequestCredentials): void {
    const client: LiveClient = { socket, organisationId, credentials, alive: true, stop: () => {} };
    const unwatch = watches.watch(organisationId, (message) => {
      failingOrganisations.delete(organisationId);
      send(client, ledgerMessageJson(message));
    });
    const unsubscribe = liveEvents.subscribe(organisationId, (event) => send(client, event));
    client.stop = () => {
      unwatch();
      unsubscribe();
      clients.delete(client);
    };
    clients.add(client);
    socket.on('pong', () => { client.alive = true; });
    socket.on('close', () => client.stop());
    socket.on('error', (error) => logger.debug({ err: error }, 'live updates: socket error'));
  }

  function onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '').split('?')[0];
    if (path !== livePath) {
      refuseUpgrade(socket, new GatewayError('not_found', { publicMessage: 'No WebSocket is served at this path.' }));
      return;
    }
    if (closing) {
      refuseUpgrade(socket, new GatewayError('service_unavailable', { publicMessage: 'The admin is shutting down; reconnect shortly.' }));
      return;
    }
    admit(request).then(({ organisationId, credentials }) => {
      if (closing) {
        refuseUpgrade(socket, new GatewayError('service_unavailable', { publicMessage: 'The admin is shutting down; reconnect shortly.' }));
        return;
      }
      if (socket.destroyed) return;
      wss.handleUpgrade(request, socket, head, (webSocket) => open(webSocket, organisationId, credentials));
    }, (error: unknown) => {
      if (!(error instanceof GatewayError) || toHttpError(error).status >= 500) logger.error({ err: error }, 'live updates: upgrade failed');
      refuseUpgrade(socket, error instanceof GatewayError ? error : new GatewayError('internal_error', { cause: error }));
    });
  }
  server.on('upgrade', onUpgrade);

  // A peer that did not answer the last ping is gone (a laptop lid closed, a NAT that forgot it).
  const pingTimer = setInterval(() => {
    for (const client of clients) {
      if (!client.alive) {
        client.socket.terminate();
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }, deps.pingMs ?? 15_000);

  // Sessions expire and are revoked, tokens too: a connection lives only as long as its credentials.
  const recheckTimer = setInterval(() => {
    for (const client of clients) {
      deps.authenticate(client.credentials).then((authentication) => {
        if (authentication === undefined) client.socket.close(closeCodes.unauthenticated, 'credentials ended');
        else if (!mayWatch(authentication.actor, client.organisationId)) client.socket.close(closeCodes.forbidden, 'organisation no longer visible');
      }, (error: unknown) => {
        logger.warn({ err: error }, 'live updates: credentials re-check failed');
      });
    }
  }, deps.recheckMs ?? 30_000);

  return {
    async close() {
      // The upgrade listener stays: until the HTTP server has closed, a new upgrade is answered 503, not dropped.
      closing = true;
      clearInterval(pingTimer);
      clearInterval(recheckTimer);
      watches.close();
      const closed = [...clients].map((client) => new Promise<void>((resolve) => {
        if (client.socket.readyState === WebSocket.CLOSED) {
          resolve();
          return;
        }
        client.socket.once('close', () => resolve());
        client.socket.close(closeCodes.goingAway, 'server shutting down');
      }));
      const deadline = setTimeout(() => { for (const client of clients) client.socket.terminate(); }, closeHandshakeMs);
      await Promise.all(closed);
      clearTimeout(deadline);
      await new Promise<void>((resolve) => { wss.close(() => resolve()); });
    },
  };
}
