// The RPM lease rule stated in TypeScript, for tests: the fake lease server of leased-pools.test.ts
// answers with it, and rpm-lease-script.int.test.ts holds the Redis script (the rule production
// runs, rate-limit/rpm-lease-script.ts, where its reasons are written) to it on random cases.

/**
 * How many tokens one lease admits (tokens): `free` = limit minus the pool's counted entries,
 * `need` = requests waiting now, `want` (>= need) = need plus speculation. Waiting requests get
 * what fits; the speculative rest is at most a quarter of what they leave free.
 */
export function rpmLeaseSize(free: number, need: number, want: number): number {
  if (free <= 0) return 0;
  const forWaiting = Math.min(need, free);
  const spare = Math.max(0, Math.min(want - forWaiting, Math.floor((free - forWaiting) / 4)));
  return forWaiting + spare;
}
