import type { ProxyMetrics } from '@gateway/telemetry';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import { deploymentsOf, type AttemptOutcome, type DeploymentRouter, type RouterObserver } from '../routing/deployment-router.ts';

/** The labelled children of one deployment's attempt metrics, made once (no label object or hashing per attempt). */
interface DeploymentChildren {
  attempts: Partial<Record<AttemptOutcome, { inc(): void }>>;
  duration: { observe(value: number): void };
}

/**
 * The router's observations as metrics (docs/operations.md): attempts by outcome, their
 * duration, ejections and failovers. Labels are a model slug and a deployment name from the
 * config snapshot: bounded (at most 16 deployments per model). Each deployment's labelled
 * children are made on its first attempt and kept, so an attempt costs two map lookups and the
 * increments.
 */
export class DeploymentMetrics implements RouterObserver {
  readonly #metrics: ProxyMetrics;
  readonly #children = new Map<string, Map<string, DeploymentChildren>>();

  /** Observes into the proxy's metrics. */
  constructor(metrics: ProxyMetrics) {
    this.#metrics = metrics;
  }

  attempt(model: string, deployment: string, outcome: AttemptOutcome, durationS: number): void {
    const children = this.#childrenOf(model, deployment);
    const counter = children.attempts[outcome] ??= this.#metrics.proxyDeploymentAttempts.labels({ model, deployment, outcome });
    counter.inc();
    children.duration.observe(durationS);
  }

  ejected(model: string, deployment: string): void {
    this.#metrics.proxyDeploymentEjections.inc({ model, deployment });
  }

  failedOver(model: string): void {
    this.#metrics.proxyFailovers.inc({ model });
  }

  /**
   * Sets the gauges at scrape time from the router's view of the snapshot's models (ejected per
   * deployment, healthy deployments per model), after dropping the health and series of
   * deployments the snapshot no longer has (a removed model or deployment).
   */
  collect(router: DeploymentRouter, models: ReadonlyMap<string, GatewayModelEntry> | undefined): void {
    const { proxyDeploymentEjected: ejectedGauge, proxyModelHealthyDeployments: healthyGauge } = this.#metrics;
    if (models === undefined) return;
    for (const [model, deployment] of router.retain(models)) ejectedGauge.remove({ model, deployment });
    for (const [model, children] of this.#children) {
      if (!models.has(model)) {
        this.#children.delete(model);
        healthyGauge.remove({ model });
        continue;
      }
      const names = new Set(deploymentsOf(models.get(model)!).map((deployment) => deployment.name));
      for (const name of children.keys()) if (!names.has(name)) children.delete(name);
    }
    for (const [slug, model] of models) {
      let healthy = 0;
      for (const { name } of deploymentsOf(model)) {
        const ejected = router.isEjected(slug, name);
        if (!ejected) healthy += 1;
        ejectedGauge.set({ model: slug, deployment: name }, ejected ? 1 : 0);
      }
      healthyGauge.set({ model: slug }, healthy);
    }
  }

  #childrenOf(model: string, deployment: string): DeploymentChildren {
    let ofModel = this.#children.get(model);
    if (ofModel === undefined) {
      ofModel = new Map();
      this.#children.set(model, ofModel);
    }
    let children = ofModel.get(deployment);
    if (children === undefined) {
      children = { attempts: {}, duration: this.#metrics.proxyDeploymentAttemptDuration.labels({ model, deployment }) };
      ofModel.set(deployment, children);
    }
    return children;
  }
}
