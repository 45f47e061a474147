import type { Cluster, Redis } from 'ioredis';
import type { LeaseReply } from './leased-pools.ts';

/**
 * The shared RPM pool's one atomic step, as a Redis Lua script: the only place the lease rule
 * runs when the proxy has Redis. Time comes from the Redis server (TIME), so replicas with
 * skewed clocks still agree. Each admitted token is logged with score now + leaseMs, its latest
 * possible use, and counts while score > now - window: so no 60-s window of uses ever holds more
 * than the limit (proof in docs/proxy.md "Requests per minute").
 *
 * The lease size (the taper): `free` = limit minus the pool's counted entries, `need` = requests
 * waiting on the replica, `want` (>= need) = need plus the tokens the replica expects to use
 * within one lease. Waiting requests get what fits, min(need, free), exactly as per-request
 * admission would give them (their tokens are used at once). The speculative part, which may
 * lapse unused, is min(want - that, floor((free - that) / 4)): near the limit (fewer than 4
 * free after the waiting requests) it is 0 and the pool is exactly as strict as per-request
 * admission; far from it, R replicas leasing at once still leave at least (3/4)^R of the free
 * tokens to the others. rpm-lease-script.int.test.ts runs this script and the TypeScript
 * statement of the same rule (test-support/rpm-lease-model.ts) on the same random cases.
 *
 * KEYS[1] = the pool's sorted set (one key: the script runs on a Cluster as on one server); ARGV =
 * limit, window ms, leaseMs, need, want, a member prefix unique to the call, then the ages (ms) of
 * requests the replica admitted alone while the pool was unreachable (DegradedShares): they are
 * logged first, at their use time, so the pool counts them before it leases. Returns {admitted, free before admission (>= 0), retryAfterMs (when full
 * after it, else 0), resetMs}.
 */
const leaseScript = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local need = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local recorded = #ARGV - 6
local r = 1
while r <= recorded do
  local args = {}
  local last = math.min(recorded, r + 199)
  for j = r, last do
    args[#args + 1] = now - tonumber(ARGV[6 + j])
    args[#args + 1] = ARGV[6] .. ':r:' .. j
  end
  redis.call('ZADD', key, unpack(args))
  r = last + 1
end
if recorded > 0 then redis.call('PEXPIRE', key, window + leaseMs) end
local count = redis.call('ZCARD', key)
local free = limit - count
local admitted = 0
if free > 0 then
  local forWaiting = math.min(need, free)
  local spare = math.max(0, math.min(want - forWaiting, math.floor((free - forWaiting) / 4)))
  admitted = forWaiting + spare
  local score = now + leaseMs
  local i = 1
  while i <= admitted do
    local args = {}
    local last = math.min(admitted, i + 199)
    for j = i, last do
      args[#args + 1] = score
      args[#args + 1] = ARGV[6] .. ':' .. j
    end
    redis.call('ZADD', key, unpack(args))
    i = last + 1
  end
  redis.call('PEXPIRE', key, window + leaseMs)
  count = count + admitted
end
local retryAfter = 0
if count >= limit then
  local freeing = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  retryAfter = math.max(1, tonumber(freeing[2]) + window - now)
end
local reset = 0
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if newest[2] then reset = math.max(1, tonumber(newest[2]) + window - now) end
return {admitted, math.max(0, free), retryAfter, reset}
`;

/**
 * The lease script bound to one Redis connection: one atomic lease on the pool at `key` (limit in
 * tokens, windowMs and leaseMs in ms), first logging `recordedAgesMs` (ms ago) of requests admitted without it.
 */
export type RpmLeaseCommand = (key: string, limit: number, windowMs: number, leaseMs: number, need: number, want: number, member: string, recordedAgesMs?: readonly number[]) => Promise<LeaseReply>;

/** The custom command defineCommand adds to the client. */
interface RpmCommands {
  gatewayRpmLease(key: string, limit: number, windowMs: number, leaseMs: number, need: number, want: number, member: string, ...recordedAgesMs: number[]): Promise<[number, number, number, number]>;
}

/** Registers the lease script on a client (one server, Sentinel or Cluster; ioredis sends it by SHA, loading it on first use) and returns the call. */
export function defineRpmLeaseCommand(redis: Redis | Cluster): RpmLeaseCommand {
  redis.defineCommand('gatewayRpmLease', { numberOfKeys: 1, lua: leaseScript });
  const commands = redis as (Redis | Cluster) & RpmCommands;
  return async (key, limit, windowMs, leaseMs, need, want, member, recordedAgesMs = []) => {
    const reply = await commands.gatewayRpmLease(key, limit, windowMs, leaseMs, need, want, member, ...recordedAgesMs.map((age) => Math.max(0, Math.round(age))));
    const [admitted, free, retryAfterMs, resetMs] = reply.map(Number) as [number, number, number, number];
    return { admitted, free, retryAfterMs, resetMs };
  };
}
