#!/usr/bin/env python3
"""Benchmark: N concurrent ``tidegate run``s on one repository against the same N serially.

    .venv/bin/python bench/concurrent_runs.py --from-repo DIR [--runs 8] [--verify "sleep 2"]
                                              [--workdir DIR] [--json]
    .venv/bin/python bench/concurrent_runs.py --repo COPY ...
    .venv/bin/python bench/concurrent_runs.py --repo COPY --warm-shadow ...

The repository (the 50,000-file one of ``/work/shared/bench/make_repo.py``) is copied
(``cp -a``) into a temp dir, or ``--repo`` names a copy to use as is. Each run is the real CLI making a one-line structured edit to
its own file (``pkg/d000/m000/mod00000I.py``), verified by ``--verify`` (default a 2 s
sleep) and merged back. Serial: the N runs one after another; concurrent: the N spawned
at once. Between the two (outside the timing) the edits are undone with ``git checkout``.

Reported, per mode: each run's wall time (spawn to exit), the whole mode's wall time, the
landing lock's waits and holds (each report's ``landing.waited_s``/``held_s``), and peak
memory: the largest sum, over the samples taken every 50 ms from ``/proc``, of the RSS of
every live process of the runs (the N tidegate processes and all their descendants: git,
the verify command, bubblewrap). Memory is sampled in a second round of each mode, not
the timed one: the sampler's walks of ``/proc`` take CPU from the runs it watches
(``bench_cpu_s``: the bench's own CPU in a round). The goal (issue #26): the concurrent
wall time within 1.5x one run's wall time (the serial runs' median) plus the concurrent
runs' summed holds of the landing lock (the serialised apply-backs). ``cpu_s``: the user + system CPU of the
runs and every process they waited for (``RUSAGE_CHILDREN``); divided by the cores, the
least wall time the mode could take here if nothing else ran.

A third round (timed, not sampled) runs the N concurrently again with
``TIDEGATE_PREP_SLOTS=0``: without preparation slots (``workspace.prep_slots``), every run's
CPU-bound start shared fairly with all the others', as before slots existed.

``--warm-shadow``: every run uses the warm pool (``--warm-shadow``). An untimed round of N
concurrent runs without preparation slots first fills the pool's N slots (one pooled shadow
per run that overlaps); then both modes run warm: serial runs reuse
one slot, concurrent ones one slot each. ``pool_slots``: how many slots the pool held.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transaction import ROOT, log, machine  # the sibling bench module

GOAL = 1.5


def target(i: int) -> tuple[str, str]:
    """The file run ``i`` edits and its objective."""
    path = f"pkg/d000/m000/mod{i:06d}.py"
    old = f'"""Module {i}."""'
    new = f'"""Module {i}, edited by concurrent run {i}."""'
    return path, f"edit-file: {path}\nreplace: {old}\nwith: {new}\n"


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                children = Path(f"/proc/{p}/task/{task}/children").read_text().split()
                todo += [int(c) for c in children]
        except OSError:
            continue
    return out


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler(threading.Thread):
    """The peak, over samples every 50 ms, of the summed RSS of ``pids`` and descendants."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.pids: list[int] = []
        self.peak_kib = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            total = sum(_rss_kib(p) for root in list(self.pids) for p in _descendants(root))
            self.peak_kib = max(self.peak_kib, total)
            self.samples += 1
            self._halt.wait(0.05)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _spawn(args: argparse.Namespace, repo: Path, env: dict[str, str], i: int) -> Any:
    argv = [
        str(args.tidegate), "run", "--repo", str(repo), "--objective", target(i)[1],
        "--verify", args.verify, "--max-attempts", "1", "--json",
        *(["--warm-shadow"] if args.warm_shadow else []),
    ]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: Any, started: float) -> dict[str, Any]:
    out, err = proc.communicate()
    wall = time.monotonic() - started
    try:
        report = json.loads(out)
    except ValueError:
        raise SystemExit(f"a run printed no report: {err.decode()[-2000:]}") from None
    landing = report.get("landing") or {}
    return {
        "wall_s": round(wall, 3),
        "status": report["status"],
        "exit": proc.returncode,
        "waited_s": landing.get("waited_s"),
        "held_s": landing.get("held_s"),
        "seq": landing.get("seq"),
    }


def _children_cpu() -> float:
    """User + system CPU of the waited-for children (the runs and the git and verify
    processes each run waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_mode(
    args: argparse.Namespace, repo: Path, env: dict[str, str], concurrent: bool, memory: bool
) -> Any:
    """One round of ``args.runs`` runs. ``memory``: sample their RSS (the sampler's reads
    of ``/proc`` take CPU from the runs, so a round that samples is not the timed one)."""
    sampler = RssSampler()
    if memory:
        sampler.start()
    cpu_before, own_before = _children_cpu(), _self_cpu()
    started = time.monotonic()
    runs = []
    if concurrent:
        procs = []
        for i in range(args.runs):
            procs.append((_spawn(args, repo, env, i), time.monotonic()))
            sampler.pids.append(procs[-1][0].pid)
        # One reader each: a run's end is timed when it ends, and none blocks on a full
        # stdout pipe while the bench waits for another.
        with ThreadPoolExecutor(max_workers=args.runs) as pool:
            runs = list(pool.map(lambda pt: _finish(*pt), procs))
    else:
        for i in range(args.runs):
            proc, t = _spawn(args, repo, env, i), time.monotonic()
            sampler.pids.append(proc.pid)
            runs.append(_finish(proc, t))
    wall = time.monotonic() - started
    cpu, own = _children_cpu() - cpu_before, _self_cpu() - own_before
    if memory:
        sampler.stop()
    subprocess.run(
        ["git", "checkout", "--", *(target(i)[0] for i in range(args.runs))], cwd=repo, check=True
    )
    held = [r["held_s"] for r in runs if r["held_s"] is not None]
    waited = [r["waited_s"] for r in runs if r["waited_s"] is not None]
    return {
        "wall_s": round(wall, 3),
        "runs": runs,
        "landed": sum(1 for r in runs if r["status"] == "succeeded"),
        "lock_held_max_s": round(max(held, default=0.0), 4),
        "lock_held_sum_s": round(sum(held), 4),
        "lock_waited_max_s": round(max(waited, default=0.0), 4),
        "peak_rss_sum_mb": round(sampler.peak_kib / 1024, 1) if memory else None,
        "cpu_s": round(cpu, 2),
        "cpu_floor_s": round(cpu / (os.cpu_count() or 1), 2),
        "bench_cpu_s": round(own, 2),
        "rss_samples": sampler.samples if memory else None,
    }


def measured(args: argparse.Namespace, repo: Path, env: dict[str, str], concurrent: bool) -> Any:
    """A timed round, then a round whose memory is sampled (its peak joins the first)."""
    timed = run_mode(args, repo, env, concurrent, memory=False)
    sampled = run_mode(args, repo, env, concurrent, memory=True)
    timed["peak_rss_sum_mb"] = sampled["peak_rss_sum_mb"]
    timed["rss_samples"] = sampled["rss_samples"]
    timed["memory_round_wall_s"] = sampled["wall_s"]
    return timed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--from-repo", type=Path, help="the repository to copy")
    where.add_argument("--repo", type=Path, help="run in this copy (the edits are undone)")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--verify", default="sleep 2")
    ap.add_argument("--workdir", type=Path, help="where the copy goes (default: a temp dir)")
    ap.add_argument("--tidegate", type=Path, default=ROOT / ".venv" / "bin" / "tidegate")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--warm-shadow", action="store_true", help="runs use the warm pool")
    args = ap.parse_args(argv)
    if not ((args.from_repo or args.repo) / ".git").is_dir():
        ap.error(f"{args.from_repo or args.repo}: not a git work tree")
    if not 1 <= args.runs <= 100:
        ap.error("--runs must be 1..100")
    workdir = Path(tempfile.mkdtemp(prefix="tidegate-concurrent-bench-", dir=args.workdir))
    try:
        return _bench(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _bench(args: argparse.Namespace, workdir: Path) -> int:
    repo, shadows = args.repo or workdir / "repo", workdir / "shadows"
    shadows.mkdir()
    if args.from_repo:
        log(f"copying {args.from_repo} ...")
        subprocess.run(["cp", "-a", str(args.from_repo), str(repo)], check=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "TMPDIR": str(shadows),
        "TIDEGATE_STATE_ROOT": str(workdir / "state"),
    }
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, check=True, capture_output=True)
    if args.warm_shadow:
        # Without preparation slots: all N overlap, so the pool gets N shadows. With them
        # the first runs can end before the last start, and the pool holds fewer shadows
        # until a round overlaps more (that round then makes the missing ones, cold).
        log(f"{args.runs} concurrent runs to fill the warm pool (untimed) ...")
        run_mode(args, repo, {**env, "TIDEGATE_PREP_SLOTS": "0"}, True, memory=False)
    log(f"{args.runs} serial runs (timed, then sampling memory) ...")
    serial = measured(args, repo, env, concurrent=False)
    log(f"{args.runs} concurrent runs (timed, then sampling memory) ...")
    concurrent = measured(args, repo, env, concurrent=True)
    log(f"{args.runs} concurrent runs without preparation slots (timed) ...")
    unslotted = run_mode(args, repo, {**env, "TIDEGATE_PREP_SLOTS": "0"}, True, memory=False)
    one = round(statistics.median(r["wall_s"] for r in serial["runs"]), 3)
    budget = GOAL * one + concurrent["lock_held_sum_s"]
    result = {
        "runs": args.runs,
        "verify": args.verify,
        "machine": machine(),
        "load_average": os.getloadavg(),
        "one_run_median_s": one,
        "serial": serial,
        "concurrent": concurrent,
        "concurrent_unslotted": unslotted,
        "goal_s": round(budget, 3),
        "goal_met": concurrent["wall_s"] <= budget,
        "warm_shadow": args.warm_shadow,
        "pool_slots": sum(
            1
            for f in (repo / ".git" / "tidegate").glob("shadow-pool*")
            if f.name == "shadow-pool" or f.suffix[1:].isdigit()
        ),
        "memory": "peak over 50 ms samples of the summed VmRSS (/proc) of the tidegate "
        "processes and all their descendants",
    }
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0


def _table(r: dict[str, Any]) -> str:
    s, c, u = r["serial"], r["concurrent"], r["concurrent_unslotted"]

    def runs(label: str, f: Any) -> str:
        return label.ljust(22) + "".join(
            f"{f(x['wall_s'] for x in m['runs']):>12.3f}" for m in (s, c, u)
        )

    rows = [
        f"{r['runs']} runs, --verify {r['verify']!r}, load {r['load_average'][0]:.1f}"
        + (f", warm pool ({r['pool_slots']} slots)" if r["warm_shadow"] else ""),
        f"{'':22}{'serial':>12}{'concurrent':>12}{'no slots':>12}",
        f"{'wall (all runs) s':22}{s['wall_s']:>12}{c['wall_s']:>12}{u['wall_s']:>12}",
        runs("run wall min s", min),
        runs("run wall median s", statistics.median),
        runs("run wall max s", max),
        f"{'landed':22}{s['landed']:>12}{c['landed']:>12}{u['landed']:>12}",
        f"{'lock held max s':22}{s['lock_held_max_s']:>12}{c['lock_held_max_s']:>12}",
        f"{'lock held sum s':22}{s['lock_held_sum_s']:>12}{c['lock_held_sum_s']:>12}",
        f"{'lock waited max s':22}{s['lock_waited_max_s']:>12}{c['lock_waited_max_s']:>12}",
        f"{'peak RSS sum MB':22}{s['peak_rss_sum_mb']:>12}{c['peak_rss_sum_mb']:>12}",
        f"{'CPU (user+sys) s':22}{s['cpu_s']:>12}{c['cpu_s']:>12}{u['cpu_s']:>12}",
        f"{'CPU / cores s':22}{s['cpu_floor_s']:>12}{c['cpu_floor_s']:>12}",
        f"{'bench own CPU s':22}{s['bench_cpu_s']:>12}{c['bench_cpu_s']:>12}",
        f"goal: concurrent wall <= {GOAL} x {r['one_run_median_s']} + {c['lock_held_sum_s']} "
        f"= {r['goal_s']} s: {'met' if r['goal_met'] else 'NOT met'}",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
