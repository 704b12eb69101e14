#!/usr/bin/env python3
"""What VALIDATE + AST_VALIDATE cost on a 200-file change set, next to raw ``git apply``.

    python bench/validation.py [--files 200] [--lines 200] [--repeat 5] [--json]

Builds a repository of N Python modules (~L lines each), a unified diff changing one line in
every module, then measures in the same run, interleaved:

* the floor: ``git apply --check`` + ``git apply`` of that diff in a scratch clone;
* tidegate: a full ``tidegate run`` with that diff (scripted planner, ``--verify true``),
  reading the VALIDATE and AST_VALIDATE durations from its JSON report's phase events, plus
  the per-file parse times AST_VALIDATE measures.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIDEGATE = ROOT / ".venv" / "bin" / "tidegate"
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, input=input, capture_output=True, check=True
    ).stdout


def module(i: int, lines: int) -> str:
    body = [f'"""Module {i}."""', ""]
    n = 0
    while len(body) < lines:
        body += [f"def f{n}(x):", f"    # step {n}", f"    return x * {n} + {i}", "", ""]
        n += 1
    return "\n".join(body) + "\n"


def build(dest: Path, files: int, lines: int) -> str:
    dest.mkdir()
    git(dest, "init", "-q")
    for i in range(files):
        path = dest / "pkg" / f"m{i:04d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(module(i, lines))
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base")
    for i in range(files):
        path = dest / "pkg" / f"m{i:04d}.py"
        path.write_text(path.read_text().replace("return x * 0 +", "return x * 100 +", 1))
    diff = git(dest, "diff").decode()
    git(dest, "checkout", "-q", "--", ".")
    return diff


def floor(repo: Path, diff_file: Path, scratch: Path) -> float:
    clone = scratch / "clone"
    if clone.exists():
        shutil.rmtree(clone)
    git(scratch, "clone", "-q", str(repo), str(clone))
    start = time.perf_counter()
    git(clone, "apply", "--check", str(diff_file))
    git(clone, "apply", str(diff_file))
    return time.perf_counter() - start


def tidegate(repo: Path, script: Path) -> tuple[float, float]:
    res = subprocess.run(
        [
            str(TIDEGATE),
            "run",
            "--repo",
            str(repo),
            "--planner",
            f"scripted:{script}",
            "--objective",
            "bench",
            "--verify",
            "true",
            "--json",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(res.stdout)
    if report["status"] != "succeeded":
        raise SystemExit(f"tidegate run failed: {report['message']}")
    git(repo, "checkout", "-q", "--", ".")  # the bench repo's own index: fine to write
    ms = {p["phase"]: p["duration_ms"] for p in report["phases"]}
    return ms["VALIDATE"] / 1000, ms["AST_VALIDATE"] / 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-validation-") as tmp:
        scratch = Path(tmp)
        repo = scratch / "repo"
        diff = build(repo, a.files, a.lines)
        diff_file = scratch / "change.diff"
        diff_file.write_text(diff)
        script = scratch / "plan.json"
        script.write_text(json.dumps({"attempts": [{"diff_file": str(diff_file)}]}))
        floors, validates, asts = [], [], []
        for i in range(a.repeat):
            print(f"round {i + 1}/{a.repeat}", file=sys.stderr)
            floors.append(floor(repo, diff_file, scratch))
            v, s = tidegate(repo, script)
            validates.append(v)
            asts.append(s)
    f, v, s = (statistics.median(x) for x in (floors, validates, asts))
    result = {
        "files": a.files,
        "lines_per_file": a.lines,
        "repeat": a.repeat,
        "git_apply_s": round(f, 4),
        "validate_s": round(v, 4),
        "ast_validate_s": round(s, 4),
        "overhead_ratio": round((v + s) / f, 2),
        "ast_ms_per_file": round(s * 1000 / a.files, 2),
    }
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{a.files} files x ~{a.lines} lines, median of {a.repeat}")
        print(f"  git apply --check + apply : {f * 1000:8.1f} ms")
        print(f"  VALIDATE                  : {v * 1000:8.1f} ms")
        print(
            f"  AST_VALIDATE              : {s * 1000:8.1f} ms  ({result['ast_ms_per_file']} ms/file)"
        )
        print(f"  (VALIDATE + AST_VALIDATE) / git apply = {result['overhead_ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
