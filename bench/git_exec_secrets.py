#!/usr/bin/env python3
"""Benchmark: what keeping secret-shaped files out of git.exec costs, on a large repository.

    .venv/bin/python bench/git_exec_secrets.py --repo DIR [--runs 5] [--json]

For each call a model makes (diff, log -p, show HEAD, grep, show <rev>:<path>, cat-file
of a blob id), the same argv through git.exec (uncontained, so the sandbox's own start is
not counted) and through plain git. git.exec adds the pathspec exclusions (diff, log,
show, grep), one ``rev-parse`` per operand, and for a blob read by id the object -> path
map (``rev-list --objects --all --reflog --indexed-objects``). Median wall time of
``--runs`` runs; the ratio is git.exec / plain git. DIR is not written (git.exec reads a
copy of the index).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from tidegate.tools.calls import ToolCall
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort


def _median(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    root = opts.repo.resolve()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        ).stdout

    files = git("ls-files").split()
    path = files[len(files) // 2]
    blob = git("rev-parse", f"HEAD:{path}").strip()
    cases = [
        ["diff"],
        ["log", "-p", "-1"],
        ["show", "HEAD", "--stat"],
        ["grep", "-c", "tidegate-no-such-word"],
        ["show", f"HEAD:{path}"],
        ["cat-file", "-p", blob],
    ]
    context = ToolContext(workspace=WorkspacePort(root), containment="none")
    rows: list[dict[str, Any]] = []
    ids = itertools.count()
    with ToolExecutor(context, activate_all=True) as ex:
        for n, args in enumerate(cases):

            def tool(args: list[str] = args, n: int = n) -> None:
                res = ex.execute(
                    ToolCall(call_id=f"b{n}-{next(ids)}", name="git_exec", arguments={"args": args})
                )
                assert res.ok, res

            tool()  # warm
            raw = _median(lambda args=args: git(*args), opts.runs)
            ours = _median(tool, opts.runs)
            rows.append(
                {"args": " ".join(args), "git_s": raw, "git_exec_s": ours, "ratio": ours / raw}
            )
    if opts.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{len(files)} tracked files, {opts.runs} runs, median seconds")
    for row in rows:
        print(
            f"  {row['args'][:40]:40} git {row['git_s']:.3f}  git.exec {row['git_exec_s']:.3f}"
            f"  x{row['ratio']:.2f}"
        )


if __name__ == "__main__":
    main()
