import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { GatewayError, toHttpError } from '@gateway/errors';
import { requestIdFrom, type Logger } from '@gateway/logger';

/**
 * One thing a service needs (or reports) to serve: the database, the config snapshot, a channel.
 * `ready` decides readiness, `state` is what /readyz's body says about it; a dependency may have
 * either or both.
 */
export interface DependencyCheck {
  /** Its name, as a key of /readyz's `dependencies` (`config`, `ledger`, `redis`). */
  name: string;
  /**
   * Whether it allows serving now; readiness needs every one to pass. Omitted: it is only reported,
   * never gates (a dependency every replica shares, whose loss would unready them all at once).
   */
  ready?(): boolean | Promise<boolean>;
  /** Its state for /readyz's body (`fresh`, `up`, `down`, ...); omitted: it is not named in the body. */
  state?(): string;
}

/** The JSON body of /healthz and /readyz: the status word, and the named dependencies' states when any are reported. */
export interface ProbeBody {
  status: 'ok' | 'ready' | 'not_ready';
  dependencies?: Record<string, string>;
}

/** One probe answer: 200 or 503 with its body. */
export interface ProbeAnswer {
  status: 200 | 503;
  body: ProbeBody;
}

/** What the probes need to know about their service. */
export interface HealthProbeOptions {
  /** The lifecycle's readiness: started and not closing (Lifecycle.isReady). */
  isServing(): boolean;
  /** Named dependencies, checked in order on every /readyz while the service is serving. */
  dependencies?: readonly DependencyCheck[];
}

/** /healthz and /readyz of one service, as answers and as request handlers. */
export interface HealthProbes {
  /** Liveness: always 200 `{"status":"ok"}` while the process answers at all. */
  liveness(): ProbeAnswer;
  /**
   * Readiness: 200 `{"status":"ready"}` when the service is serving and every gating dependency
   * passes, 503 `{"status":"not_ready"}` otherwise, both with `dependencies` when any has a state.
   */
  readiness(): Promise<ProbeAnswer>;
  /** Answers /healthz on a node or express response. */
  handleLiveness(request: IncomingMessage, response: ServerResponse): void;
  /** Answers /readyz on a node or express response. */
  handleReadiness(request: IncomingMessage, response: ServerResponse): void;
}

/** Writes a probe answer as JSON (keeping a content type or request id already set by middleware). */
function writeAnswer(response: ServerResponse, answer: ProbeAnswer): void {
  const json = JSON.stringify(answer.body);
  response.statusCode = answer.status;
  if (!response.hasHeader('content-type')) response.setHeader('content-type', 'application/json; charset=utf-8');
  response.setHeader('content-length', Buffer.byteLength(json));
  response.end(json);
}

/** Creates the /healthz and /readyz of a service (see HealthProbes). */
export function createHealthProbes(options: HealthProbeOptions): HealthProbes {
  const dependencies = options.dependencies ?? [];
  const reported = dependencies.filter((dependency) => dependency.state !== undefined);

  const states = (): Record<string, string> | undefined => (reported.length === 0
    ? undefined
    : Object.fromEntries(reported.map((dependency) => [dependency.name, dependency.state!()])));

  const passes = async (): Promise<boolean> => {
    // Nothing is asked of a dependency before the start has finished or once closing began.
    if (!options.isServing()) return false;
    for (const dependency of dependencies) {
      if (dependency.ready !== undefined && !await dependency.ready()) return false;
    }
    // Asked again: a close may have begun while a check was waiting on its dependency.
    return options.isServing();
  };

  const readiness = async (): Promise<ProbeAnswer> => {
    const ready = await passes();
    const dependencyStates = states();
    const status = ready ? 'ready' : 'not_ready';
    return { status: ready ? 200 : 503, body: dependencyStates === undefined ? { status } : { status, dependencies: dependencyStates } };
  };

  const liveness = (): ProbeAnswer => ({ status: 200, body: { status: 'ok' } });

  return {
    liveness,
    readiness,
    handleLiveness(_request, response) {
      writeAnswer(response, liveness());
    },
    handleReadiness(_request, response) {
      readiness().then(
        (answer) => writeAnswer(response, answer),
        // A check that throws counts as failing: the probe says not ready rather than erroring.
        () => writeAnswer(response, { status: 503, body: { status: 'not_ready' } }),
      );
    },
  };
}

/** Options of createProbeOnlyListener. */
export interface ProbeOnlyListenerOptions {
  logger: Logger;
  /** The public message of the 404 for any other path, e.g. "The ledger serves only /healthz and /readyz over HTTP." */
  notFoundMessage: string;
}

/**
 * The whole HTTP interface of a service whose real interface is not HTTP (the ledger's is gRPC):
 * GET or HEAD `/healthz` and `/readyz`, everything else a 404 in the gateway's error shape. Each
 * request's id is echoed in `x-request-id`; probes are logged at debug (they arrive every few
 * seconds), anything else at info.
 */
export function createProbeOnlyListener(probes: HealthProbes, options: ProbeOnlyListenerOptions): RequestListener {
  const { logger } = options;
  return (request, response) => {
    const requestId = requestIdFrom(request.headers['x-request-id']);
    const path = (request.url ?? '/').split('?')[0];
    const isProbe = request.method === 'GET' || request.method === 'HEAD';
    const isProbePath = path === '/healthz' || path === '/readyz';
    response.setHeader('x-request-id', requestId);
    response.setHeader('content-type', 'application/json');
    response.once('finish', () => {
      logger[isProbePath ? 'debug' : 'info']({ requestId, method: request.method, path, status: response.statusCode }, 'http request');
    });
    if (isProbe && path === '/healthz') {
      probes.handleLiveness(request, response);
    } else if (isProbe && path === '/readyz') {
      probes.handleReadiness(request, response);
    } else {
      const error = toHttpError(new GatewayError('not_found', { publicMessage: options.notFoundMessage }));
      response.writeHead(error.status, error.headers);
      response.end(JSON.stringify(error.body));
    }
  };
}
