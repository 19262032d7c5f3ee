"""Where the server's Python time goes in one request of a path: cProfile over many requests through
Django's test client (the benchmark's settings, PostgreSQL, warmed up), no HTTP server or wrk.

    DATABASE_URL=postgres://…/bench_db .venv/bin/python -m bench.http.profile --paths bare,tool_call_check

**It empties the database named by DATABASE_URL**, as bench/http/run.py does.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from bench.http import inprocess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="bare,decide_candidate,tool_call_check,tool_call_result")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warm", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    client = inprocess.prepare(args.warm + args.requests)
    from bench.http.run import PATHS

    wanted = args.paths.split(",")
    for p in (p for p in PATHS if p.name in wanted):
        send = inprocess.sender(client, p)
        for i in range(args.warm):
            send(i)
        profile = cProfile.Profile(time.process_time)  # CPU: not the waits for PostgreSQL
        started, cpu = time.perf_counter(), time.process_time()
        profile.enable()
        for i in range(args.warm, args.warm + args.requests):
            send(i)
        profile.disable()
        wall = (time.perf_counter() - started) * 1000 / args.requests
        cpu = (time.process_time() - cpu) * 1000 / args.requests
        print(f"\n===== {p.name}: {wall:.2f} ms wall, {cpu:.2f} ms CPU a request (under the profiler) =====")
        stats = pstats.Stats(profile).strip_dirs().sort_stats(args.sort)
        stats.print_stats(args.top)


if __name__ == "__main__":
    main()
