import type { Propagation } from './admin-records.ts';

/** Pushes committed configuration to connected proxies (the config stream implements it). */
export interface ConfigPublisher {
  /**
   * Sends the configuration at `version` (or newer) to every connected proxy, then waits until
   * each proxy connected now has acknowledged `version` or later, or until the ack timeout.
   */
  publish(version: bigint): Promise<Propagation>;
}
