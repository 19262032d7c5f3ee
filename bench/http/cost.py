"""CPU cost of a request on each path against bare's, in one process: the paths run in interleaved blocks
through Django's test client (the benchmark's settings, PostgreSQL on loopback, no HTTP server or wrk),
so the machine's noise falls on every path alike. Server CPU is this process's ``process_time``;
PostgreSQL's is its backend's, read from /proc (the backend must run on this machine).

    DATABASE_URL=postgres://…/bench_db .venv/bin/python -m bench.http.cost --paths tool_call_check

A path's share is bare's cost over the path's (server plus PostgreSQL): the throughput share it would
have if CPU alone bounded the rate. **It empties the database named by DATABASE_URL**, as run.py does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench.http import inprocess


def _backend_ms(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115 - read once, closed by GC
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="tool_call_check,tool_call_result")
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--block", type=int, default=300, help="requests a block")
    parser.add_argument("--warm", type=int, default=300)
    args = parser.parse_args()
    client = inprocess.prepare(args.warm + args.blocks * args.block)
    from django.db import connection

    from bench.http import run

    names = ["bare", *args.paths.split(",")]
    paths = {p.name: p for p in run.PATHS if p.name in names}
    if len(paths) != len(names):
        sys.exit(f"unknown path in {names}")
    senders = {name: inprocess.sender(client, p) for name, p in paths.items()}
    for send in senders.values():
        for i in range(args.warm):
            send(i)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    costs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for block in range(args.blocks):
        order = names if block % 2 == 0 else names[::-1]
        for name in order:
            first = args.warm + block * args.block
            py, pg = time.process_time(), _backend_ms(backend)
            for i in range(first, first + args.block):
                senders[name](i)
            costs[name].append(
                ((time.process_time() - py) * 1000 / args.block, (_backend_ms(backend) - pg) / args.block)
            )
    bare = costs["bare"]
    print(f"{'path':<22} {'python ms':>10} {'pg ms':>7} {'share (min)':>12} {'share (median)':>15}")
    for name in names:
        py = min(c[0] for c in costs[name])
        pg = statistics.median(c[1] for c in costs[name])
        shares = [(b[0] + b[1]) / (c[0] + c[1]) for b, c in zip(bare, costs[name], strict=True)]
        best = (min(b[0] for b in bare) + statistics.median(b[1] for b in bare)) / (py + pg)
        print(f"{name:<22} {py:>10.3f} {pg:>7.3f} {best:>12.3f} {statistics.median(shares):>15.3f}")


if __name__ == "__main__":
    main()
