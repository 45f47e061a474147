-- wrk script of bench/support/wrk-latency.ts, run with one connection per wrk thread: POSTs the
-- body in WRK_BODY (the headers come as wrk -H options), times every request itself, and when the
-- run ends prints one line `wrk-latency {json}` with the histogram of those times (µs -> requests)
-- and every failure: answers outside 2xx (counted here, since wrk's summary.errors.status only
-- counts 4xx/5xx), socket errors and timeouts.
--
-- Why not latency:percentile(): before done() sees it, wrk corrects its histogram for coordinated
-- omission (stats_correct adds, for every request slower than twice the mean interval between a
-- connection's requests, made-up samples at its latency minus 1, 2, ... intervals), so a 5 ms
-- pause of a target answering every 50 µs becomes a hundred slow samples: at one connection the
-- fake upstream, whose requests all but a few took under a millisecond, showed a p99 of ~4.5 ms.
-- The correction grows with a target's rate, so it would also skew gateway minus baseline. Those
-- corrected figures still go out (corrected*) for comparison; the timing here is what each
-- request saw, as autocannon's is, at 1 µs resolution.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } wrk_latency_timespec;
int clock_gettime(int clock_id, wrk_latency_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local timespec = ffi.new("wrk_latency_timespec")
local function nowUs()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return tonumber(timespec.tv_sec) * 1000000 + math.floor(tonumber(timespec.tv_nsec) / 1000)
end

wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY")

-- setup() runs in the main Lua state, once per thread; done() reads each thread's own counters.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

-- Each wrk thread loads this script in its own Lua state, so these globals are per thread; with
-- one connection per thread, request() and response() alternate for one request at a time.
histogram = {}
non2xx = 0
local prepared
local sentAtUs
function init(args)
  prepared = wrk.format()
end
-- wrk calls request() just before it writes a request and response() once its last byte is read.
function request()
  sentAtUs = nowUs()
  return prepared
end
function response(status, headers, body)
  local latencyUs = nowUs() - sentAtUs
  histogram[latencyUs] = (histogram[latencyUs] or 0) + 1
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end

function done(summary, latency, requests)
  local merged = {}
  local answeredOutside2xx = 0
  for _, thread in ipairs(threads) do
    answeredOutside2xx = answeredOutside2xx + thread:get("non2xx")
    for latencyUs, count in pairs(thread:get("histogram")) do merged[latencyUs] = (merged[latencyUs] or 0) + count end
  end
  local buckets = {}
  for latencyUs, count in pairs(merged) do table.insert(buckets, string.format("[%d,%d]", latencyUs, count)) end
  local errors = summary.errors
  io.write(string.format(
    'wrk-latency {"requests":%d,"durationUs":%d,"correctedP50Us":%d,"correctedP99Us":%d,"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d,"histogram":[%s]}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), answeredOutside2xx,
    errors.connect, errors.read, errors.write, errors.timeout, table.concat(buckets, ",")))
end
