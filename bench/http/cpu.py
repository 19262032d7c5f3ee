"""CPU time of the benchmark's server and of PostgreSQL, read from /proc around a wrk run."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_ticks(server_pid: int) -> dict[int, tuple[str, int]]:
    """CPU time so far (clock ticks, user + system) of the server (bin/serve's process and its workers)
    and of PostgreSQL's processes on this machine, by process, from /proc."""
    ticks: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # the process ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        pid, ppid, used = int(entry.name), int(fields[1]), int(fields[11]) + int(fields[12])
        if pid == server_pid or ppid == server_pid:
            ticks[pid] = ("server", used)
        elif name.startswith("postgres"):
            ticks[pid] = ("postgres", used)
    return ticks


def cpu_ms_per_request(
    before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], requests: int
) -> dict[str, float]:
    """Where the time went between two ``cpu_ticks``: milliseconds a request for each group. A process
    that ended in between (an autovacuum worker) is not counted: its last ticks are gone with it."""
    used = {"server": 0, "postgres": 0}
    for pid, (group, ticks) in after.items():
        used[group] += ticks - before.get(pid, (group, 0))[1]
    return {group: t / os.sysconf("SC_CLK_TCK") * 1000 / max(1, requests) for group, t in used.items()}
