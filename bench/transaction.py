#!/usr/bin/env python3
"""Benchmark: one guarded tidegate patch run against the raw git commands it cannot avoid.

    .venv/bin/python bench/transaction.py [--files 50000] [--ignored 20000] [--repeat 5]
                                          [--make-repo PATH | --from-repo DIR] [--json]
                                          [--profile] [--warm [--status] [--trace]]

Builds the synthetic repository with the shared ``make_repo.py`` (deterministic: same
arguments, same bytes), then measures on it, in the same run and interleaved:

* **floor** - the raw git work of a guarded change: copy ``.git/index`` to a temp file,
  ``GIT_INDEX_FILE=tmp git add -A``, ``git write-tree``, ``git commit-tree``,
  ``git worktree add --detach``, edit one line in that worktree, ``git diff`` there,
  ``git apply`` of that diff in the main work tree, ``git worktree remove --force``.
  (The ``git apply -R`` that undoes it runs outside the timed region.)
* **tidegate** - ``tidegate run --repo DEST --objective 'edit-file: ...' --verify true
  --json`` through the real CLI: the same one-line edit, verified and merged back. Wall
  time from spawn to exit, and the peak RSS reported by ``wait4`` for the process (the
  kernel's figure is the maximum over the process and the git children it waited for).
  The edit is undone with ``git checkout -- FILE`` outside the timed region.

* **git status** (``--status``) - ``git status --porcelain`` in the bench repository, as a
  user types it, against the ``--warm-shadow`` run of the same round (issue #12: at most 3x).

``--from-repo DIR`` copies a repository (``cp -a``) instead of building one; ``--src DIR``
runs the CLI on another checkout's ``src/`` (a baseline); ``--trace`` ends with one traced
``--warm-shadow`` CLI run that logs every git call tidegate makes, with its start, its time
and its thread. The runs record into a private state root, with Python's bytecode cache on
as in an installed tidegate.

After each round (outside the timed region) the bench repository's own index is refreshed,
so both contenders start every round from the same stat cache. The order of the two
alternates from round to round. ``--profile`` adds in-process runs that time tidegate's
bootstrap, phases, cleanup and every git subcommand it spawns. Progress goes to stderr;
the table (or, with ``--json``, one JSON object) to stdout.
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
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COLD_TARGET = 1.1
"""Issue #12: a cold run within 1.1x the raw git floor (it was 1.5 before)."""
TARGET = "pkg/d000/m000/mod000000.py"
OLD_LINE = '"""Module 0."""'
NEW_LINE = '"""Module 0, edited by the benchmark."""'
OBJECTIVE = f"edit-file: {TARGET}\nreplace: {OLD_LINE}\nwith: {NEW_LINE}\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def git(
    repo: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
) -> bytes:
    res = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **IDENTITY, **(env or {})},
        input=input,
        capture_output=True,
        check=False,
    )
    if res.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {repo}: {res.stderr.decode()}")
    return res.stdout


# ---------------------------------------------------------------------------------------
# The two contenders.


def floor_once(repo: Path, scratch: Path, shadows: Path, n: int) -> tuple[float, dict[str, float]]:
    """The raw git floor; returns seconds and the seconds of each step. Leaves the main
    tree as it found it."""
    temp_index = scratch / f"floor-{n}.index"
    worktree = shadows / f"floor-wt-{n}"
    env = {"GIT_INDEX_FILE": str(temp_index)}
    steps: dict[str, float] = {}
    start = last = time.perf_counter()

    def step(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps[name] = now - last
        last = now

    shutil.copyfile(repo / ".git" / "index", temp_index)
    git(repo, "add", "-A", env=env)
    step("copy index + git add -A")
    tree = git(repo, "write-tree", env=env).decode().strip()
    commit = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", "floor T0").decode().strip()
    step("write-tree + commit-tree")
    git(repo, "worktree", "add", "--detach", "--quiet", str(worktree), commit)
    step("worktree add")
    target = worktree / TARGET
    target.write_text(target.read_text().replace(OLD_LINE, NEW_LINE, 1))
    diff = git(worktree, "diff", "--binary", "--no-color", "--no-ext-diff")
    step("edit + git diff")
    git(repo, "apply", "-", input=diff)
    step("git apply (main tree)")
    git(repo, "worktree", "remove", "--force", str(worktree))
    step("worktree remove")
    elapsed = time.perf_counter() - start
    if NEW_LINE not in (repo / TARGET).read_text():
        raise SystemExit("floor: the edit did not reach the main work tree")
    git(repo, "apply", "-R", "-", input=diff)
    temp_index.unlink(missing_ok=True)
    return elapsed, steps


def console_script(tidegate: Path, scratch: Path) -> Path:
    """A console script for the tidegate that ``PYTHONPATH`` names (``--src``, a baseline):
    its ``cli.entry`` where it has one, else ``cli.main`` (checkouts before it existed)."""
    path = scratch / "tidegate-any-src"
    path.write_text(
        f"#!{tidegate.parent / 'python'}\nimport sys\nfrom tidegate import cli\n"
        "sys.exit(getattr(cli, 'entry', cli.main)())\n"
    )
    path.chmod(0o755)
    return path


def tidegate_once(
    repo: Path, scratch: Path, tidegate: Path, env: dict[str, str], n: int, extra: list[str]
) -> dict[str, Any]:
    """One real CLI run; returns wall seconds, peak RSS (KiB) and the JSON report."""
    out_path = scratch / f"tidegate-{n}{''.join(extra)}.json"
    err_path = scratch / f"tidegate-{n}{''.join(extra)}.err"
    argv = [
        str(tidegate),
        "run",
        "--repo",
        str(repo),
        "--objective",
        OBJECTIVE,
        "--verify",
        "true",
        "--json",
        *extra,
    ]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        report = json.loads(out_path.read_text())
    except ValueError:
        raise SystemExit(
            f"tidegate exited {proc.returncode} without a JSON report:\n{err_path.read_text()}"
        ) from None
    if proc.returncode != 0 or report.get("status") != "succeeded":
        raise SystemExit(f"tidegate run failed ({proc.returncode}): {report.get('message')}")
    if NEW_LINE not in (repo / TARGET).read_text():
        raise SystemExit("tidegate: the edit did not reach the main work tree")
    git(repo, "checkout", "--", TARGET)
    return {
        "seconds": elapsed,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
        "report": report,
    }


def status_once(repo: Path) -> dict[str, float]:
    """``git status --porcelain`` as a user types it (it may refresh the index, as git
    does by default): wall seconds and CPU seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["git", "status", "--porcelain"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("git status failed in the bench repository")
    return {"seconds": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime}


def refresh(repo: Path) -> None:
    """Bring the bench repo's own index stat cache up to date (not timed)."""
    git(repo, "update-index", "-q", "--refresh")
    if git(repo, "status", "--porcelain", "--untracked-files=all").strip():
        raise SystemExit("the bench repository is not clean between rounds")


def startup_seconds(python: Path, repeat: int) -> dict[str, float]:
    """Interpreter start, and start plus importing the CLI (what every run pays first)."""
    out: dict[str, float] = {}
    for label, code in (("python", "pass"), ("python+import", "import tidegate.cli.app")):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([str(python), "-c", code], check=True)
            times.append(time.perf_counter() - start)
        out[label] = statistics.median(times)
    return out


# ---------------------------------------------------------------------------------------
# In-process profile: where a tidegate run's time goes.


@contextmanager
def instrumented() -> Iterator[dict[str, Any]]:
    """Wrap tidegate's git runner and bootstrap/cleanup steps with timers."""
    from tidegate.flow import outcome, transaction
    from tidegate.git import command as git_module
    from tidegate.workspace import shadow as shadow_module

    stats: dict[str, Any] = {"git": defaultdict(lambda: [0, 0.0]), "steps": defaultdict(float)}
    originals: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, key: Callable[..., str]) -> None:
        original = getattr(owner, name, None)
        if original is None:  # the source moved on: time what still exists
            log(f"profile: {getattr(owner, '__name__', owner)}.{name} not found; not timed")
            return
        originals.append((owner, name, original))

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                label = key(*args, **kwargs)
                elapsed = time.perf_counter() - start
                if label.startswith("git "):
                    entry = stats["git"][label]
                    entry[0] += 1
                    entry[1] += elapsed
                else:
                    stats["steps"][label] += elapsed

        setattr(owner, name, timed)

    def git_label(self: Any, *args: str, **kwargs: Any) -> str:
        words = [a for a in args[:3] if not a.startswith("-")][:2]
        if words and words[0] not in ("worktree", "cat-file"):
            words = words[:1]
        return "git " + " ".join(words)

    wrap(git_module.Git, "run", git_label)
    wrap(transaction, "discover", lambda *a, **k: "discover repository")
    wrap(transaction, "load_policy", lambda *a, **k: "load policy")
    wrap(transaction, "ensure_excluded", lambda *a, **k: "ensure .git/info/exclude")
    wrap(transaction, "take_snapshot", lambda *a, **k: "BOOTSTRAP: T0 snapshot")
    wrap(outcome, "final_diff", lambda *a, **k: "report: final diff")
    wrap(outcome, "changed_files", lambda *a, **k: "report: changed-file hashes")
    wrap(shadow_module.ShadowWorktree, "create", lambda *a, **k: "BOOTSTRAP: shadow worktree add")
    wrap(shadow_module.ShadowWorktree, "remove", lambda *a, **k: "cleanup: shadow worktree remove")
    try:
        yield stats
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)


def profile(repo: Path, repeat: int, shadows: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "src"))
    import resource

    os.environ["TMPDIR"] = str(shadows)
    tempfile.tempdir = None  # re-read TMPDIR: tidegate puts its shadow under the temp dir

    from tidegate.flow.transaction import execute
    from tidegate.records.request import RunRequest

    totals: list[float] = []
    steps: dict[str, list[float]] = defaultdict(list)
    phases: dict[str, list[float]] = defaultdict(list)
    git_calls: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for n in range(repeat):
        refresh(repo)
        os.sync()
        log(f"profile run {n + 1}/{repeat}")
        with instrumented() as stats:
            start = time.perf_counter()
            report = execute(
                RunRequest(repo=repo, objective=OBJECTIVE, objective_base=repo, verify="true")
            )
            totals.append(time.perf_counter() - start)
        if report.status != "succeeded":
            raise SystemExit(f"profile run failed: {report.message}")
        git(repo, "checkout", "--", TARGET)
        for label, seconds in stats["steps"].items():
            steps[label].append(seconds)
        for event in report.phases:
            phases[event.phase].append(event.duration_ms / 1000)
        for label, (count, seconds) in stats["git"].items():
            git_calls[label].append((count, seconds))
    self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "runs": repeat,
        "in_process_total_s": statistics.median(totals),
        "steps_s": {k: statistics.median(v) for k, v in steps.items()},
        "phases_s": {k: statistics.median(v) for k, v in phases.items()},
        "git_s": {
            k: {
                "calls": statistics.median(c for c, _ in v),
                "seconds": statistics.median(s for _, s in v),
            }
            for k, v in sorted(
                git_calls.items(), key=lambda kv: -statistics.median(s for _, s in kv[1])
            )
        },
        # The bench process's own peak: tidegate's Python side, run in-process.
        "python_self_maxrss_mb": round(self_kib / 1024, 1),
    }


# ---------------------------------------------------------------------------------------


def fs_type(path: Path) -> str:
    """The file system type of ``path`` (from /proc/mounts; longest matching mount point)."""
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            point = fields[1]
            if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
                best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def machine() -> dict[str, Any]:
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "tidegate_commit": head + ("+dirty src" if dirty else ""),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=50000, help="tracked files (default 50000)")
    ap.add_argument("--ignored", type=int, default=20000, help="ignored files (default 20000)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of each (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    ap.add_argument(
        "--make-repo",
        type=Path,
        default=ROOT.parent / "shared" / "bench" / "make_repo.py",
        help="make_repo.py (default: ../shared/bench/make_repo.py from the project root)",
    )
    ap.add_argument(
        "--from-repo",
        type=Path,
        help="copy this repository (cp -a) instead of building one with make_repo.py",
    )
    ap.add_argument(
        "--status",
        action="store_true",
        help="also time `git status --porcelain` each round, and print --warm-shadow / status",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="after the rounds, one traced --warm-shadow CLI run: every git call and its time",
    )
    ap.add_argument("--tidegate", type=Path, default=ROOT / ".venv" / "bin" / "tidegate")
    ap.add_argument(
        "--src",
        type=Path,
        help="run the CLI on another checkout's src/ (PYTHONPATH), e.g. a baseline commit",
    )
    ap.add_argument("--workdir", type=Path, help="where to build the repo (default: a temp dir)")
    ap.add_argument(
        "--shadow-dir",
        type=Path,
        help="where both contenders put their worktrees (tidegate via TMPDIR); default: the "
        "OS temp dir, as tidegate does for its users",
    )
    ap.add_argument("--keep", action="store_true", help="keep the repository afterwards")
    ap.add_argument("--profile", action="store_true", help="add an in-process time breakdown")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="also time `tidegate run --warm-shadow` (the pooled shadow is made in the warm-up)",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.warm and args.warmup < 1:
        ap.error("--warm needs --warmup >= 1 (the first warm run creates the pooled shadow)")
    if args.from_repo is None and not args.make_repo.is_file():
        ap.error(f"--make-repo {args.make_repo}: no such file")
    if args.from_repo is not None and not (args.from_repo / ".git").is_dir():
        ap.error(f"--from-repo {args.from_repo}: not a git work tree")
    if (args.status or args.trace) and not args.warm:
        ap.error("--status and --trace measure the warm run: add --warm")
    if not args.tidegate.exists():
        ap.error(f"--tidegate {args.tidegate}: no such file (install the project in .venv)")

    workdir = Path(tempfile.mkdtemp(prefix="tidegate-bench-", dir=args.workdir))
    repo = workdir / "repo"
    scratch = workdir / "scratch"
    scratch.mkdir()
    shadows = Path(tempfile.mkdtemp(prefix="tidegate-bench-shadows-", dir=args.shadow_dir))
    state_root = workdir / "state"
    # The runs' records go to a private state root; Python keeps its bytecode cache as an
    # installed tidegate does (PYTHONDONTWRITEBYTECODE would recompile every module per run).
    tide_env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "TMPDIR": str(shadows),
        "TIDEGATE_STATE_ROOT": str(state_root),
    }
    if args.src is not None:
        tide_env["PYTHONPATH"] = str(args.src.resolve())
        args.tidegate = console_script(args.tidegate, scratch)
    try:
        start = time.perf_counter()
        if args.from_repo is not None:
            log(f"copying {args.from_repo} to {repo}")
            subprocess.run(["cp", "-a", str(args.from_repo), str(repo)], check=True)
        else:
            log(f"building {args.files} files / {args.ignored} ignored in {repo}")
            subprocess.run(
                [
                    sys.executable,
                    str(args.make_repo),
                    str(repo),
                    "--files",
                    str(args.files),
                    "--ignored",
                    str(args.ignored),
                ],
                check=True,
                stdout=sys.stderr,
            )
        build_s = time.perf_counter() - start
        log(f"repository built in {build_s:.1f}s")
        if OLD_LINE not in (repo / TARGET).read_text():
            raise SystemExit(f"{TARGET} does not hold {OLD_LINE!r}")
        refresh(repo)

        floor: list[float] = []
        floor_steps: dict[str, list[float]] = defaultdict(list)
        runs: list[dict[str, Any]] = []
        warm_runs: list[dict[str, Any]] = []
        status_runs: list[dict[str, float]] = []
        contenders = ["floor", "tidegate"] + (["tidegate --warm-shadow"] if args.warm else [])
        contenders += ["git status"] if args.status else []
        rounds = args.warmup + args.repeat
        for n in range(rounds):
            timed = n >= args.warmup
            tag = f"round {n + 1 - args.warmup}/{args.repeat}" if timed else "warm-up"
            shift = n % len(contenders)  # rotate who goes first
            for which in contenders[shift:] + contenders[:shift]:
                os.sync()  # no write-back left over from the other contender
                if which == "git status":
                    st = status_once(repo)
                    log(f"{tag}: git status {st['seconds']:.3f}s")
                    if timed:
                        status_runs.append(st)
                elif which == "floor":
                    seconds, steps = floor_once(repo, scratch, shadows, n)
                    log(f"{tag}: floor {seconds:.3f}s")
                    if timed:
                        floor.append(seconds)
                        for name, value in steps.items():
                            floor_steps[name].append(value)
                else:
                    extra = which.split()[1:]
                    run = tidegate_once(repo, scratch, args.tidegate, tide_env, n, extra)
                    log(
                        f"{tag}: {which} {run['seconds']:.3f}s, "
                        f"peak RSS {run['maxrss_kib'] / 1024:.1f} MB"
                    )
                    if timed:
                        (warm_runs if extra else runs).append(run)
                refresh(repo)

        log("measuring interpreter start-up")
        python = args.tidegate.parent / "python"
        startup = startup_seconds(python if python.exists() else Path(sys.executable), 5)

        floor_median = statistics.median(floor)
        tide_median = statistics.median(r["seconds"] for r in runs)
        ratios = [r["seconds"] / f for r, f in zip(runs, floor, strict=True)]
        peak_mb = max(r["maxrss_kib"] for r in runs) / 1024
        phase_ms: dict[str, list[float]] = defaultdict(list)
        in_report: list[float] = []
        for r in runs:
            rep = r["report"]
            in_report.append(rep["duration_s"])
            for event in rep["phases"]:
                phase_ms[event["phase"]].append(event["duration_ms"])
        result: dict[str, Any] = {
            "files": args.files,
            "ignored": args.ignored,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "machine": machine(),
            "src": str(args.src) if args.src else "this checkout",
            "repo_build_s": round(build_s, 2),
            "floor_s": [round(x, 4) for x in floor],
            "tidegate_s": [round(r["seconds"], 4) for r in runs],
            "floor_median_s": round(floor_median, 4),
            "tidegate_median_s": round(tide_median, 4),
            "ratio_of_medians": round(tide_median / floor_median, 3),
            "median_ratio": round(statistics.median(ratios), 3),
            "peak_rss_mb": round(peak_mb, 1),
            "shadow_dir": str(shadows.parent),
            "shadow_fs": fs_type(shadows),
            "floor_steps_median_s": {
                k: round(statistics.median(v), 4) for k, v in floor_steps.items()
            },
            "breakdown": {
                "report_duration_median_s": round(statistics.median(in_report), 4),
                "outside_report_median_s": round(
                    statistics.median(r["seconds"] - r["report"]["duration_s"] for r in runs), 4
                ),
                "phases_median_ms": {
                    k: round(statistics.median(v), 2) for k, v in phase_ms.items()
                },
                "startup_median_s": {k: round(v, 4) for k, v in startup.items()},
            },
            "target": {"ratio": COLD_TARGET, "peak_rss_mb": 200},
        }
        result["target_met"] = {
            "ratio": result["median_ratio"] <= COLD_TARGET,
            "peak_rss": peak_mb <= 200,
        }
        if warm_runs:
            warm_median = statistics.median(r["seconds"] for r in warm_runs)
            warm_ratios = [r["seconds"] / f for r, f in zip(warm_runs, floor, strict=True)]
            warm_phases: dict[str, list[float]] = defaultdict(list)
            for r in warm_runs:
                for event in r["report"]["phases"]:
                    warm_phases[event["phase"]].append(event["duration_ms"])
            result["warm"] = {
                "tidegate_s": [round(r["seconds"], 4) for r in warm_runs],
                "cpu_median_s": round(statistics.median(r["cpu_s"] for r in warm_runs), 4),
                "tidegate_median_s": round(warm_median, 4),
                "median_ratio": round(statistics.median(warm_ratios), 3),
                "ratio_of_medians": round(warm_median / floor_median, 3),
                "peak_rss_mb": round(max(r["maxrss_kib"] for r in warm_runs) / 1024, 1),
                "report_duration_median_s": round(
                    statistics.median(r["report"]["duration_s"] for r in warm_runs), 4
                ),
                "phases_median_ms": {
                    k: round(statistics.median(v), 2) for k, v in warm_phases.items()
                },
            }
        if status_runs:
            result["status"] = status_summary(status_runs, warm_runs)
        if args.trace:
            result["trace"] = traced_run(repo, scratch, args.tidegate, tide_env)
        if args.profile:
            try:
                result["profile"] = profile(repo, args.repeat, shadows)
            except Exception as exc:  # the measurement above stands on its own
                log(f"profile failed: {type(exc).__name__}: {exc}")
                result["profile_error"] = f"{type(exc).__name__}: {exc}"
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_table(result)
        return 0
    finally:
        prune = subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True)
        del prune
        shutil.rmtree(shadows, ignore_errors=True)
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def status_summary(
    status_runs: list[dict[str, float]], warm_runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """``git status --porcelain`` against the warm repeat run of the same rounds."""
    st_median = statistics.median(r["seconds"] for r in status_runs)
    warm_median = statistics.median(r["seconds"] for r in warm_runs)
    st_cpu = statistics.median(r["cpu_s"] for r in status_runs)
    warm_cpu = statistics.median(r["cpu_s"] for r in warm_runs)
    ratios = [w["seconds"] / s["seconds"] for w, s in zip(warm_runs, status_runs, strict=True)]
    return {
        "status_s": [round(r["seconds"], 4) for r in status_runs],
        "median_s": round(st_median, 4),
        "cpu_median_s": round(st_cpu, 4),
        "median_ratio": round(statistics.median(ratios), 3),
        "ratio_of_medians": round(warm_median / st_median, 3),
        "cpu_ratio_of_medians": round(warm_cpu / st_cpu, 3),
        "target": 3.0,
        "target_met": statistics.median(ratios) <= 3.0,
    }


# Run in the child: tidegate's CLI with every git call timed (threads included).
TRACE_CHILD = r"""
import json, sys, threading, time
start = time.perf_counter()
from tidegate.git import command as git_module
calls = []
original = git_module.Git.run
def run(self, *args, **kwargs):
    t = time.perf_counter()
    try:
        return original(self, *args, **kwargs)
    finally:
        calls.append({
            "at_ms": round((t - start) * 1000, 1),
            "ms": round((time.perf_counter() - t) * 1000, 1),
            "argv": " ".join(args)[:100],
            "thread": threading.current_thread().name,
        })
git_module.Git.run = run
from tidegate.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
done = time.perf_counter()
with open(sys.argv[1], "w") as fh:
    json.dump({"calls": calls, "main_ms": round((done - start) * 1000, 1)}, fh)
sys.exit(code)
"""


def traced_run(repo: Path, scratch: Path, tidegate: Path, env: dict[str, str]) -> dict[str, Any]:
    """One --warm-shadow CLI run with every git call it makes (and its time) logged."""
    python = tidegate.parent / "python"
    out = scratch / "trace.json"
    argv = [
        str(python),
        "-c",
        TRACE_CHILD,
        str(out),
        "run",
        "--repo",
        str(repo),
        "--objective",
        OBJECTIVE,
        "--verify",
        "true",
        "--json",
        "--warm-shadow",
    ]
    refresh(repo)
    os.sync()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"traced run failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    report = json.loads(proc.stdout)
    git(repo, "checkout", "--", TARGET)
    trace: dict[str, Any] = json.loads(out.read_text())
    trace["wall_s"] = round(wall, 4)
    trace["report_duration_s"] = report["duration_s"]
    trace["phases_ms"] = {e["phase"]: e["duration_ms"] for e in report["phases"]}
    trace["git_calls"] = len(trace["calls"])
    trace["git_ms"] = round(sum(c["ms"] for c in trace["calls"]), 1)
    return trace


def print_trace(t: dict[str, Any]) -> None:
    print()
    print(
        f"traced --warm-shadow run: wall {t['wall_s']:.3f} s, in main() {t['main_ms']:.0f} ms, "
        f"execute() {t['report_duration_s'] * 1000:.0f} ms; {t['git_calls']} git calls, "
        f"{t['git_ms']:.0f} ms in git (background thread included)"
    )
    print("  start ms   took ms  thread  git")
    for c in t["calls"]:
        where = "main" if c["thread"] == "MainThread" else "bg"
        print(f"  {c['at_ms']:8.1f}  {c['ms']:8.1f}  {where:<6}  {c['argv']}")
    print("  phases (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in t["phases_ms"].items()))


def print_table(r: dict[str, Any]) -> None:
    m = r["machine"]
    print(
        f"tidegate vs raw git: {r['files']} files, {r['ignored']} ignored, "
        f"{r['repeat']} interleaved runs each ({r['warmup']} warm-up)"
    )
    print(f"machine: {m['nproc']} cpus, {m['memory_gib']} GiB, {m['git']}, python {m['python']}")
    print(
        f"tidegate at {m['tidegate_commit']} (src: {r['src']}); "
        f"worktrees under {r['shadow_dir']} ({r['shadow_fs']})"
    )
    print()
    rows = [
        ("floor median (raw git)", f"{r['floor_median_s']:.3f} s"),
        ("tidegate median", f"{r['tidegate_median_s']:.3f} s"),
        ("median ratio (tidegate/floor)", f"{r['median_ratio']:.2f}  (target <= {COLD_TARGET})"),
        ("ratio of medians", f"{r['ratio_of_medians']:.2f}"),
        ("tidegate peak RSS", f"{r['peak_rss_mb']:.1f} MB  (target <= 200)"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    met = r["target_met"]
    print(f"  {'target met':<{width}}  ratio: {met['ratio']}, peak RSS: {met['peak_rss']}")
    if "warm" in r:
        w = r["warm"]
        print(f"  {'tidegate --warm-shadow median':<{width}}  {w['tidegate_median_s']:.3f} s")
        print(f"  {'  median ratio (warm/floor)':<{width}}  {w['median_ratio']:.2f}")
        print(f"  {'  peak RSS':<{width}}  {w['peak_rss_mb']:.1f} MB")
    if "status" in r:
        st = r["status"]
        print(
            f"  {'git status --porcelain median':<{width}}  {st['median_s']:.3f} s  "
            f"(CPU {st['cpu_median_s']:.3f} s; --warm-shadow CPU {r['warm']['cpu_median_s']:.3f} s)"
        )
        print(
            f"  {'  median ratio (warm/status)':<{width}}  {st['median_ratio']:.2f}  "
            f"(target <= 3; ratio of medians {st['ratio_of_medians']:.2f}; "
            f"CPU {st['cpu_ratio_of_medians']:.2f})"
        )
    print()
    print("floor steps (medians):")
    for name, seconds in r["floor_steps_median_s"].items():
        print(f"    {name:<26} {seconds * 1000:9.1f} ms")
    b = r["breakdown"]
    print()
    print("tidegate breakdown (medians):")
    print(f"  process start-up + imports: {b['startup_median_s']['python+import']:.3f} s")
    print(f"  inside execute() (report duration_s): {b['report_duration_median_s']:.3f} s")
    print(f"  outside execute() (start-up, cleanup, exit): {b['outside_report_median_s']:.3f} s")
    for phase, ms in b["phases_median_ms"].items():
        print(f"    {phase:<14} {ms:9.1f} ms")
    if "warm" in r:
        w = r["warm"]
        print(f"  --warm-shadow: inside execute() {w['report_duration_median_s']:.3f} s")
        for phase, ms in w["phases_median_ms"].items():
            print(f"    {phase:<14} {ms:9.1f} ms")
    if "trace" in r:
        print_trace(r["trace"])
    if "profile" in r:
        p = r["profile"]
        print()
        print(
            f"in-process profile ({p['runs']} runs, median total {p['in_process_total_s']:.3f} s):"
        )
        for label, seconds in sorted(p["steps_s"].items(), key=lambda kv: -kv[1]):
            print(f"  {label:<34} {seconds * 1000:9.1f} ms")
        print("  git subcommands (calls, time):")
        for label, v in p["git_s"].items():
            print(f"    {label:<32} {v['calls']:5.0f} {v['seconds'] * 1000:9.1f} ms")
        print(f"  peak RSS of the Python side (in-process): {p['python_self_maxrss_mb']} MB")


if __name__ == "__main__":
    sys.exit(main())
