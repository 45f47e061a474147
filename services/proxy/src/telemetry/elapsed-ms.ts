/** Milliseconds since `startedAtMs` (a performance.now() reading), to 0.01 ms: for log lines. */
export function elapsedMs(startedAtMs: number): number {
  return Math.round((performance.now() - startedAtMs) * 100) / 100;
}
