#!/usr/bin/env python3
"""Benchmark: the wall time of the 16-run gym suite at 1 and 2 workers, on the local
process pool and on a local Ray instance (whose start-up is reported on its own).

    .venv/bin/python bench/gym_suite.py [--suite sixteen] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tidegate.gym.suite import run_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="sixteen")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for executor in ("local", "ray"):
        for workers in (1, 2):
            root = Path(tempfile.mkdtemp(prefix="tidegate-bench-gym-"))
            out = run_suite(args.suite, root, contestant=None, workers=workers, executor=executor)
            errors = [r for r in out["runs"] if "error" in r]
            results.append({
                "executor": executor, "workers": workers, "runs": len(out["runs"]),
                "errors": len(errors), "wall_time_s": out["wall_time_s"],
                "executor_startup_s": out["executor_startup_s"],
            })  # fmt: skip
            if not args.json:
                r = results[-1]
                print(
                    f"{executor:<6} workers {workers}: {r['runs']} runs in {r['wall_time_s']:7.1f} s"
                    f"  (executor start-up {r['executor_startup_s']:.1f} s, errors {r['errors']},"
                    f" load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
