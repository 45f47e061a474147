/**
 * Keeps count of work that must finish before the process stops: in-flight requests (which
 * settle or release their Reserve before they end) and background ledger calls.
 */
export class TaskTracker {
  readonly #pending = new Set<Promise<unknown>>();

  /** Tracks a promise until it settles; returns it unchanged. */
  track<T>(promise: Promise<T>): Promise<T> {
    const settled = promise.then(() => undefined, () => undefined);
    this.#pending.add(settled);
    void settled.then(() => this.#pending.delete(settled));
    return promise;
  }

  /** How many tracked promises are still pending. */
  get size(): number {
    return this.#pending.size;
  }

  /** Waits until nothing is pending (including work started meanwhile) or timeoutMs passes; true when drained. */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.#pending.size > 0) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, remainingMs); });
      await Promise.race([Promise.all(this.#pending), timeout]);
      clearTimeout(timer);
    }
    return true;
  }
}
