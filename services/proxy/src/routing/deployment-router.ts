import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';

// The order in which one request tries a gateway model's upstream deployments, and the outlier
// ejection every request of this proxy process shares (docs/proxy.md "Routing").

/** How one attempt at a deployment ended (the `outcome` label of gateway_proxy_deployment_attempts_total). */
export type AttemptOutcome = 'ok' | 'http_429' | 'http_5xx' | 'http_error' | 'timeout' | 'connect_error' | 'stream_broken' | 'bad_response';

/** The outlier ejection's settings (PROXY_OUTLIER_*). */
interface OutlierPolicy {
  /** Consecutive failures that eject a deployment. */
  consecutiveFailures: number;
  /** First ejection's length, ms; doubled with each ejection that follows without a success between, up to maxEjectionMs. */
  baseEjectionMs: number;
  /** Longest ejection (and longest Retry-After honoured), ms. */
  maxEjectionMs: number;
}

/** What the router reads time and chance from (tests inject both). */
interface RouterClock {
  /** Milliseconds, monotonic enough for intervals (default Date.now). */
  now(): number;
  /** A number in [0, 1) (default Math.random). */
  random(): number;
}

/** Where the router reports what it saw (the metrics; absent in unit tests). */
export interface RouterObserver {
  /** One attempt ended, after `durationS` seconds. */
  attempt(model: string, deployment: string, outcome: AttemptOutcome, durationS: number): void;
  /** A deployment was ejected. */
  ejected(model: string, deployment: string): void;
  /** A request of the model went on to another deployment after a failed attempt. */
  failedOver(model: string): void;
}

/** What the router keeps of one deployment: its run of failures and its ejection or back-off. */
interface DeploymentHealth {
  consecutiveFailures: number;
  /** Ejections since its last success: the next one lasts base × 2^ejections (capped). */
  ejections: number;
  /** Until when it is ejected, ms (0: never was). */
  ejectedUntilMs: number;
  /** When its last ejection began, ms. */
  ejectedAtMs: number;
  /** Until when an upstream Retry-After keeps it from being tried, ms. */
  backoffUntilMs: number;
}

/** The primary alone, for entries built without a deployment list (tests, hand-built entries); built once per entry. */
const primaryOnly = new WeakMap<GatewayModelEntry, readonly UpstreamDeploymentEntry[]>();

/** A model's deployments: the config's list, else its own upstream as the one deployment `primary`. */
export function deploymentsOf(model: GatewayModelEntry): readonly UpstreamDeploymentEntry[] {
  if (model.deployments !== undefined) return model.deployments;
  let list = primaryOnly.get(model);
  if (list === undefined) {
    list = [{ name: 'primary', priority: 0, weight: 1, upstream: model.upstream, served: model }];
    primaryOnly.set(model, list);
  }
  return list;
}

const defaultClock: RouterClock = { now: () => Date.now(), random: () => Math.random() };

/**
 * Orders a model's deployments for one request and keeps their health across requests: the
 * consecutive failures of each (a success resets them), its ejection (Envoy-like: the
 * `consecutiveFailures`-th failure in a row ejects it for base × 2^(n-1), capped, n counting
 * the ejections since its last success) and an upstream's Retry-After. The health is keyed by
 * model slug and deployment name, so it survives config updates for deployments that still
 * exist; `retain` drops that of deployments that no longer do. One per proxy process: ejection
 * is this process's own view (docs/decisions.md "Routing").
 */
export class DeploymentRouter {
  readonly #policy: OutlierPolicy;
  readonly #clock: RouterClock;
  readonly #observer: RouterObserver | undefined;
  /** model slug -> deployment name -> health (two lookups, no key string built per request). */
  readonly #health = new Map<string, Map<string, DeploymentHealth>>();

  /** A router with no health recorded yet. */
  constructor(policy: OutlierPolicy, clock: RouterClock = defaultClock, observer?: RouterObserver) {
    this.#policy = policy;
    this.#clock = clock;
    this.#observer = observer;
  }

  /**
   * The deployments to try for one request, in order: by priority (lower first); within one,
   * weighted random without replacement; ejected ones and those in a Retry-After back-off left
   * out. A model with one deployment gets its list as it is (the fast path: nothing allocated,
   * nothing to choose). When every deployment is left out, the one ejected longest ago (else the
   * one whose back-off ends first) is tried alone: an ejection is a guess from past failures,
   * and refusing every request of the slug would turn a provider's bad minute into a total
   * outage of it, while one request tells whether it is back.
   */
  order(model: GatewayModelEntry): readonly UpstreamDeploymentEntry[] {
    const all = deploymentsOf(model);
    if (all.length === 1) return all;
    const now = this.#clock.now();
    const healthOf = this.#health.get(model.slug);
    const usable = healthOf === undefined ? [...all] : all.filter((deployment) => {
      const health = healthOf.get(deployment.name);
      return health === undefined || (health.ejectedUntilMs <= now && health.backoffUntilMs <= now);
    });
    if (usable.length === 0) return [this.#leastBadOf(all, healthOf!, now)];
    return this.#prioritised(usable);
  }

  /** Whether a deployment is ejected now (the `gateway_proxy_deployment_ejected` gauge). */
  isEjected(model: string, deployment: string): boolean {
    const health = this.#health.get(model)?.get(deployment);
    return health !== undefined && health.ejectedUntilMs > this.#clock.now();
  }

  /** A request of the model goes on to its next deployment after a failed attempt (gateway_proxy_failovers_total). */
  failedOver(model: string): void {
    this.#observer?.failedOver(model);
  }

  /** A successful attempt: its run of failures ends, and so does the growth of its ejections. */
  succeeded(model: string, deployment: string, durationS: number): void {
    this.#observer?.attempt(model, deployment, 'ok', durationS);
    const health = this.#health.get(model)?.get(deployment);
    if (health === undefined) return;
    health.consecutiveFailures = 0;
    health.ejections = 0;
  }

  /**
   * A failed attempt (any outcome but ok). Those that say the deployment is unwell (connect
   * error, timeout, 429, 5xx, a broken stream, an unusable answer) count towards its ejection; a
   * 4xx other than 429 says the request was wrong and counts nothing. `retryAfterMs` (a 429's or
   * 503's Retry-After) keeps it from being tried again for that long (at most the longest ejection).
   */
  failed(model: string, deployment: string, outcome: Exclude<AttemptOutcome, 'ok'>, durationS: number, retryAfterMs?: number): void {
    this.#observer?.attempt(model, deployment, outcome, durationS);
    if (outcome === 'http_error') return;
    const now = this.#clock.now();
    const health = this.#healthOf(model, deployment);
    if (retryAfterMs !== undefined && retryAfterMs > 0) health.backoffUntilMs = now + Math.min(retryAfterMs, this.#policy.maxEjectionMs);
    health.consecutiveFailures += 1;
    if (health.consecutiveFailures < this.#policy.consecutiveFailures) return;
    health.consecutiveFailures = 0;
    health.ejections += 1;
    const lengthMs = Math.min(this.#policy.baseEjectionMs * 2 ** (health.ejections - 1), this.#policy.maxEjectionMs);
    health.ejectedAtMs = now;
    health.ejectedUntilMs = now + lengthMs;
    this.#observer?.ejected(model, deployment);
  }

  /**
   * Keeps the health of the deployments `models` still have and drops the rest (a removed
   * model, a removed deployment); returns the (model, deployment) pairs dropped, so their gauges
   * can be removed too.
   */
  retain(models: ReadonlyMap<string, GatewayModelEntry>): Array<[string, string]> {
    const dropped: Array<[string, string]> = [];
    for (const [slug, healthOf] of this.#health) {
      const model = models.get(slug);
      const names = model === undefined ? undefined : new Set(deploymentsOf(model).map((deployment) => deployment.name));
      for (const name of healthOf.keys()) {
        if (names?.has(name) !== true) {
          healthOf.delete(name);
          dropped.push([slug, name]);
        }
      }
      if (healthOf.size === 0) this.#health.delete(slug);
    }
    return dropped;
  }

  #healthOf(model: string, deployment: string): DeploymentHealth {
    let healthOf = this.#health.get(model);
    if (healthOf === undefined) {
      healthOf = new Map();
      this.#health.set(model, healthOf);
    }
    let health = healthOf.get(deployment);
    if (health === undefined) {
      health = { consecutiveFailures: 0, ejections: 0, ejectedUntilMs: 0, ejectedAtMs: 0, backoffUntilMs: 0 };
      healthOf.set(deployment, health);
    }
    return health;
  }

  /** The one to try when all are left out: not backing off and ejected longest ago, else the back-off that ends first. */
  #leastBadOf(all: readonly UpstreamDeploymentEntry[], healthOf: Map<string, DeploymentHealth>, now: number): UpstreamDeploymentEntry {
    let best: UpstreamDeploymentEntry | undefined;
    let bestEjectedAtMs = Infinity;
    let soonest = all[0]!;
    let soonestBackoffMs = Infinity;
    for (const deployment of all) {
      const health = healthOf.get(deployment.name)!;
      if (health.backoffUntilMs <= now && health.ejectedAtMs < bestEjectedAtMs) {
        best = deployment;
        bestEjectedAtMs = health.ejectedAtMs;
      }
      if (health.backoffUntilMs < soonestBackoffMs) {
        soonest = deployment;
        soonestBackoffMs = health.backoffUntilMs;
      }
    }
    return best ?? soonest;
  }

  /** Sorts by priority, then shuffles each priority by weight (weighted random without replacement). */
  #prioritised(usable: UpstreamDeploymentEntry[]): UpstreamDeploymentEntry[] {
    usable.sort((a, b) => a.priority - b.priority);
    for (let start = 0; start < usable.length;) {
      let end = start + 1;
      while (end < usable.length && usable[end]!.priority === usable[start]!.priority) end += 1;
      this.#weightedShuffle(usable, start, end);
      start = end;
    }
    return usable;
  }

  /** Picks, for each position of [start, end), one of the rest with chance proportional to its weight. */
  #weightedShuffle(list: UpstreamDeploymentEntry[], start: number, end: number): void {
    if (end - start < 2) return;
    let total = 0;
    for (let index = start; index < end; index += 1) total += list[index]!.weight;
    for (let position = start; position < end - 1; position += 1) {
      let pick = this.#clock.random() * total;
      let chosen = position;
      for (let index = position; index < end; index += 1) {
        pick -= list[index]!.weight;
        if (pick < 0) {
          chosen = index;
          break;
        }
        chosen = index;
      }
      const picked = list[chosen]!;
      list[chosen] = list[position]!;
      list[position] = picked;
      total -= picked.weight;
    }
  }
}
