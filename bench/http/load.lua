-- wrk script for bench/http/run.py. Environment (read by wrk's LuaJIT):
--   BENCH_PATH   request path; "%d" in it is replaced by a per-request number (distinct across threads)
--   BENCH_BODY   JSON body; "%d" likewise
--   BENCH_TOKEN  bearer token ("" for none)
--   BENCH_MOD    the number wraps around modulo this (0: never wraps)
--   BENCH_OFFSET the first number; BENCH_THREADS wrk's thread count
-- Prints one JSON line at the end: requests, duration, errors, latency percentiles and status counts.
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  path = os.getenv("BENCH_PATH")
  body = os.getenv("BENCH_BODY")
  mod = tonumber(os.getenv("BENCH_MOD") or "0")
  nthreads = tonumber(os.getenv("BENCH_THREADS") or "1")
  n = tid + tonumber(os.getenv("BENCH_OFFSET") or "0")
  statuses = {}
  wrk.headers["Content-Type"] = "application/json"
  local token = os.getenv("BENCH_TOKEN") or ""
  if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
end

function request()
  local i = n
  if mod > 0 then i = n % mod end
  n = n + nthreads
  return wrk.format("POST", (path:gsub("%%d", tostring(i))), nil, (body:gsub("%%d", tostring(i))))
end

function response(status, headers, resp_body)
  local key = "s" .. status
  statuses[key] = (statuses[key] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    local s = thread:get("statuses")
    for k, v in pairs(s) do counts[k] = (counts[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(counts) do table.insert(parts, string.format('"%s": %d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "connect_errors": %d, "read_errors": %d, "write_errors": %d, '
      .. '"timeouts": %d, "p50_ms": %.3f, "p99_ms": %.3f, "statuses": {%s}}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, table.concat(parts, ", ")))
end
