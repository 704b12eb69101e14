#!/usr/bin/env python3
"""Benchmark: the cost of tidegate's command runner against a bare ``subprocess.run``.

    .venv/bin/python bench/runner.py [--runs 200] [--json]

Times, interleaved round by round so machine noise hits all three alike:

* **bare** - ``subprocess.run(["true"])``;
* **runner** - ``run_command(["true"], ...)`` uncontained: new session, pipes drained with
  a bounded tail, spill files, process-group kill at the end;
* **contained** - the same under bubblewrap (read-only /, writable work dir, private
  TMPDIR/HOME created and removed per call, pid and network namespaces).

Prints the median, minimum and p90 wall time of each and the ratio of medians to bare.
The machine's load shows in every column; compare within one run only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tidegate.exec.containment import ContainmentPolicy, probe
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command

USER = Clearance.user()  # the bench chose "true": the user's own command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-runner-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        spill = Path(tmp) / "spill"
        policy = ContainmentPolicy(required=True, network=False, writable=(work,))
        contenders: dict[str, Callable[[], object]] = {
            "bare": lambda: subprocess.run(["true"], check=False),
            "runner": lambda: run_command(["true"], work, 10, spill, clearance=USER),
        }
        if probe().verified:
            contenders["contained"] = lambda: run_command(
                ["true"], work, 10, spill, containment=policy, clearance=USER
            )
        else:
            print(f"[bench] no contained runs: {probe().reason}", file=sys.stderr)
        for fn in contenders.values():  # warm up imports, caches and the probe
            fn()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, fn in contenders.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    result = {
        name: {
            "median_ms": round(statistics.median(t) * 1000, 3),
            "min_ms": round(min(t) * 1000, 3),
            "p90_ms": round(statistics.quantiles(t, n=10)[-1] * 1000, 3),
            "ratio_to_bare": round(statistics.median(t) / statistics.median(times["bare"]), 2),
        }
        for name, t in times.items()
    }
    if args.json:
        print(json.dumps({"runs": args.runs, "results": result}, indent=2))
    else:
        head = f"{'':<10} {'median ms':>10} {'min ms':>8} {'p90 ms':>8} {'x bare':>7}"
        print(f"{head}   ({args.runs} runs; ratio of medians)")
        for name, row in result.items():
            print(
                f"{name:<10} {row['median_ms']:>10.3f} {row['min_ms']:>8.3f} "
                f"{row['p90_ms']:>8.3f} {row['ratio_to_bare']:>7.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
