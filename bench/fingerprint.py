#!/usr/bin/env python3
"""Benchmark: the workspace fingerprint and inventory against the raw git commands.

    .venv/bin/python bench/fingerprint.py [--files 50000] [--ignored 20000] [--repeat 5]
                                          [--modified 100] [--make-repo PATH] [--json]

Builds the synthetic repository with the shared ``make_repo.py`` (deterministic), brings
its index's stat cache up to date once (as a user's repository is in steady state), then
measures, interleaved and in the same run, in two states -- clean, and with ``--modified``
tracked files changed:

* **fingerprint** - ``workspace_fingerprint(root)`` in process (it spawns git itself);
* **status** - ``git status --porcelain`` (read-only: ``GIT_OPTIONAL_LOCKS=0``);
* **temp add** - the fingerprint's floor: copy ``.git/index`` (``shutil.copy2``),
  ``GIT_INDEX_FILE=copy git add -A``, ``git write-tree``;
* **inventory** - ``take_inventory(root)`` with its hash cache warm (a command's before and
  after capture), and once cold (the first capture in a process).

Every timing is the median of ``--repeat`` rounds; the table gives the fingerprint's ratio
to each raw command. The bench checks that ``.git/index`` is byte-identical after all
fingerprints. Progress goes to stderr; the table (or one JSON object) to stdout.
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tidegate.workspace import fingerprint as fp  # noqa: E402

MAKE_REPO = ROOT.parent / "shared" / "bench" / "make_repo.py"
"""The shared synthetic-repository builder: ``../shared/bench/`` next to the project."""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    res = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        check=False,
    )
    if res.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {res.stderr.decode()}")
    return res.stdout


def status(repo: Path) -> None:
    git(repo, "status", "--porcelain", env={"GIT_OPTIONAL_LOCKS": "0"})


def temp_add(repo: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-fp-") as scratch:
        index = Path(scratch) / "index"
        shutil.copy2(repo / ".git" / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        git(repo, "add", "-A", env=env)
        git(repo, "write-tree", env=env)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(repo: Path, repeat: int) -> dict[str, float]:
    contenders: dict[str, Callable[[], object]] = {
        "fingerprint": lambda: fp.workspace_fingerprint(repo),
        "status": lambda: status(repo),
        "temp add": lambda: temp_add(repo),
        "inventory (warm)": lambda: fp.take_inventory(repo),
    }
    fp.take_inventory(repo)  # warm the hash cache for the warm inventory
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_no in range(repeat):
        order = names if round_no % 2 == 0 else list(reversed(names))
        for name in order:
            samples[name].append(timed(contenders[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def modify(repo: Path, count: int) -> list[str]:
    tracked = git(repo, "ls-files", "-z", "pkg").decode().split("\0")
    step = max(1, len(tracked) // count)
    chosen = [p for p in tracked[::step] if p.endswith(".py")][:count]
    for rel in chosen:
        with (repo / rel).open("a") as fh:
            fh.write("# modified by the benchmark\n")
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--ignored", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--modified", type=int, default=100)
    ap.add_argument("--make-repo", type=Path, help="reuse (or create) the repo at this path")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="tidegate-bench-fp-"))
    repo = args.make_repo or scratch / "repo"
    if not repo.exists():
        if not MAKE_REPO.is_file():
            ap.error(f"{MAKE_REPO}: no such file (give --make-repo DIR holding a repository)")
        log(f"making a repo with {args.files} files and {args.ignored} ignored at {repo}")
        subprocess.run(
            [
                sys.executable,
                str(MAKE_REPO),
                str(repo),
                "--files",
                str(args.files),
                "--ignored",
                str(args.ignored),
            ],
            check=True,
        )
    time.sleep(1.1)  # let the index's racily clean entries age, then refresh them once
    git(repo, "update-index", "-q", "--refresh")
    index_before = (repo / ".git" / "index").read_bytes()

    log("cold inventory (empty hash cache)")
    cold = timed(lambda: fp.take_inventory(repo))
    log("measuring: clean")
    clean = measure(repo, args.repeat)
    chosen = modify(repo, args.modified)
    log(f"measuring: {len(chosen)} modified files")
    dirty = measure(repo, args.repeat)
    if (repo / ".git" / "index").read_bytes() != index_before:
        raise SystemExit("the fingerprint changed .git/index")
    git(repo, "checkout", "--", *chosen)  # (this refreshes the index; not measured)

    result = {
        "files": args.files,
        "ignored": args.ignored,
        "repeat": args.repeat,
        "modified": len(chosen),
        "inventory_cold_s": cold,
        "clean": clean,
        "dirty": dirty,
        "ratios": {
            state: {
                "fingerprint/status": values["fingerprint"] / values["status"],
                "fingerprint/temp add": values["fingerprint"] / values["temp add"],
            }
            for state, values in (("clean", clean), ("dirty", dirty))
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"repo: {args.files} tracked files, {args.ignored} ignored; median of "
            f"{args.repeat}; inventory cold {cold:.3f}s"
        )
        print(f"{'':18}{'clean':>10}{f'{len(chosen)} modified':>16}")
        for name in clean:
            print(f"{name:18}{clean[name]:>9.3f}s{dirty[name]:>15.3f}s")
        for label in ("fingerprint/status", "fingerprint/temp add"):
            c, d = result["ratios"]["clean"][label], result["ratios"]["dirty"][label]
            print(f"{label:22}{c:>6.2f}x{d:>15.2f}x")
    if args.make_repo is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
