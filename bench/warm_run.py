#!/usr/bin/env python3
"""Benchmark: a repeat ``tidegate run --warm-shadow`` against ``git status --porcelain``.

    .venv/bin/python bench/warm_run.py --from-repo DIR [--repeat 7] [--workdir DIR]
                                       [--shadow-dir DIR] [--src DIR] [--baseline OLD/src]
                                       [--trace] [--json]

The part of ``bench/transaction.py --warm --status`` that needs no cold run (a cold run on
a slow disk is minutes of checkout): the repository is copied (``cp -a``), one untimed
warm run makes the pooled shadow, then each round times, in alternating order, the warm
repeat run through the real CLI (a one-line structured edit, ``--verify true``, undone
afterwards) and ``git status --porcelain`` in the same tree, wall and CPU (user + system
of the process and the children it waited for). Printed: the medians, the median of the
per-round ratios (issue #12's target: at most 3) and the ratio of the CPU medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transaction import (  # the sibling bench module
    ROOT,
    console_script,
    fs_type,
    log,
    machine,
    print_trace,
    refresh,
    status_once,
    status_summary,
    tidegate_once,
    traced_run,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-repo", type=Path, required=True, help="the repository to copy")
    ap.add_argument("--repeat", type=int, default=7, help="timed rounds (default 7)")
    ap.add_argument("--workdir", type=Path, help="where the copy goes (default: a temp dir)")
    ap.add_argument("--shadow-dir", type=Path, help="TMPDIR for tidegate (its shadow goes there)")
    ap.add_argument("--src", type=Path, help="run the CLI on another checkout's src/")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another checkout's src/ timed as a third contender in the same rounds",
    )
    ap.add_argument("--tidegate", type=Path, default=ROOT / ".venv" / "bin" / "tidegate")
    ap.add_argument("--trace", action="store_true", help="end with one traced warm run")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not (args.from_repo / ".git").is_dir():
        ap.error(f"--from-repo {args.from_repo}: not a git work tree")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    workdir = Path(tempfile.mkdtemp(prefix="tidegate-warm-bench-", dir=args.workdir))
    repo, scratch, base_repo = workdir / "repo", workdir / "scratch", workdir / "repo-base"
    scratch.mkdir()
    shadows = Path(tempfile.mkdtemp(prefix="tidegate-bench-shadows-", dir=args.shadow_dir))
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "TMPDIR": str(shadows),
        "TIDEGATE_STATE_ROOT": str(workdir / "state"),
    }
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
        args.tidegate = console_script(args.tidegate, scratch)
    base_env = {**env, "PYTHONPATH": str(args.baseline.resolve())} if args.baseline else None
    try:
        log(f"copying {args.from_repo} to {repo}")
        subprocess.run(["cp", "-a", str(args.from_repo), str(repo)], check=True)
        refresh(repo)
        warm_args = ["--warm-shadow"]
        base_cli = console_script(args.tidegate, scratch)
        first = tidegate_once(repo, scratch, args.tidegate, env, 0, warm_args)
        log(f"warm-up (makes the pooled shadow): {first['seconds']:.3f}s")
        refresh(repo)
        if base_env is not None:
            # The baseline gets a copy and a pool of its own: a pool is one run's record
            # to the next, and another version's runs in between would void it.
            subprocess.run(["cp", "-a", str(repo), str(base_repo)], check=True)
            shutil.rmtree(base_repo / ".git" / "worktrees", ignore_errors=True)  # our pool's
            (base_repo / ".git" / "tidegate" / "shadow-pool").unlink(missing_ok=True)
            (base_repo / ".git" / "tidegate" / "shadow-pool.touched").unlink(missing_ok=True)
            refresh(base_repo)
            tidegate_once(base_repo, scratch, base_cli, base_env, 0, warm_args)
            refresh(base_repo)
        warm: list[dict[str, Any]] = []
        base: list[dict[str, Any]] = []
        status: list[dict[str, float]] = []
        contenders = ["warm", "status"] + (["baseline"] if base_env else [])
        for n in range(1, args.repeat + 1):
            shift = n % len(contenders)
            for which in contenders[shift:] + contenders[:shift]:
                os.sync()
                if which == "baseline":
                    assert base_env is not None
                    base.append(tidegate_once(base_repo, scratch, base_cli, base_env, n, warm_args))
                    log(f"round {n}: baseline --warm-shadow {base[-1]['seconds']:.3f}s")
                    refresh(base_repo)
                elif which == "warm":
                    warm.append(tidegate_once(repo, scratch, args.tidegate, env, n, warm_args))
                    log(f"round {n}: --warm-shadow {warm[-1]['seconds']:.3f}s")
                else:
                    status.append(status_once(repo))
                    log(f"round {n}: git status {status[-1]['seconds']:.3f}s")
                refresh(repo)
        result: dict[str, Any] = {
            "machine": machine(),
            "src": str(args.src) if args.src else "this checkout",
            "repo_fs": fs_type(repo),
            "shadow_fs": fs_type(shadows),
            "warm_s": [round(r["seconds"], 4) for r in warm],
            "warm_median_s": round(statistics.median(r["seconds"] for r in warm), 4),
            "warm_cpu_median_s": round(statistics.median(r["cpu_s"] for r in warm), 4),
            "status": status_summary(status, warm),
        }
        if base:
            result["baseline"] = {
                "src": str(args.baseline),
                "warm_s": [round(r["seconds"], 4) for r in base],
                "status": status_summary(status, base),
                "warm_cpu_median_s": round(statistics.median(r["cpu_s"] for r in base), 4),
                "median_ratio_to_baseline": round(
                    statistics.median(
                        w["seconds"] / b["seconds"] for w, b in zip(warm, base, strict=True)
                    ),
                    3,
                ),
            }
        if args.trace:
            result["trace"] = traced_run(repo, scratch, args.tidegate, env)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_result(result)
        return 0
    finally:
        for tree in (repo, base_repo):
            if tree.is_dir():
                subprocess.run(["git", "worktree", "prune"], cwd=tree, capture_output=True)
        shutil.rmtree(shadows, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


def print_result(r: dict[str, Any]) -> None:
    m, st = r["machine"], r["status"]
    print(f"tidegate --warm-shadow repeat run vs git status --porcelain, {len(r['warm_s'])} rounds")
    print(f"tidegate at {m['tidegate_commit']} (src: {r['src']}); {m['nproc']} cpus, {m['git']}")
    print(f"repository on {r['repo_fs']}, shadow on {r['shadow_fs']}")
    print(
        f"  --warm-shadow median   {r['warm_median_s']:.3f} s  (CPU {r['warm_cpu_median_s']:.3f} s)"
    )
    print(f"  git status median      {st['median_s']:.3f} s  (CPU {st['cpu_median_s']:.3f} s)")
    print(
        f"  median ratio           {st['median_ratio']:.2f}  (target <= 3; ratio of medians "
        f"{st['ratio_of_medians']:.2f}, of CPU medians {st['cpu_ratio_of_medians']:.2f})"
    )
    print("  warm runs (s): " + " ".join(f"{x:.2f}" for x in r["warm_s"]))
    print("  git status (s): " + " ".join(f"{x:.2f}" for x in st["status_s"]))
    if "baseline" in r:
        b = r["baseline"]
        bst = b["status"]
        print(f"baseline ({b['src']}), same rounds:")
        print(
            f"  --warm-shadow median   {statistics.median(b['warm_s']):.3f} s  "
            f"(CPU {b['warm_cpu_median_s']:.3f} s)"
        )
        print(
            f"  median ratio           {bst['median_ratio']:.2f}  (to git status; of CPU "
            f"medians {bst['cpu_ratio_of_medians']:.2f})"
        )
        print(f"  this / baseline        {b['median_ratio_to_baseline']:.2f}  (median per round)")
        print("  baseline runs (s): " + " ".join(f"{x:.2f}" for x in b["warm_s"]))
    if "trace" in r:
        print_trace(r["trace"])


if __name__ == "__main__":
    sys.exit(main())
