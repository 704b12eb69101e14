#!/usr/bin/env python3
"""Benchmark: the PTY driver's start-up and per-turn cost against bare pexpect.

    .venv/bin/python bench/terminal.py [--sessions 20] [--turns 200] [--json]

Interleaved round by round, so machine noise hits both columns alike:

* **start-up**: spawn ``bash --noprofile --norc --noediting -i`` on a PTY and wait for
  its first prompt; bare pexpect (``delaybeforesend=None``, ``expect``) against
  ``tidegate.exec.terminal.Terminal`` (a pyte screen fed every byte, the visible log, the
  terminal-query answers, the spill file, the whole-session kill at close);
* **per turn**: one ``echo N`` line sent and its output waited for, in an open session.

Prints the median, minimum and p90 of each, and the ratio of medians (tidegate / bare).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pexpect

from tidegate.exec.containment import host_launch
from tidegate.exec.guard import Clearance
from tidegate.exec.terminal import Terminal, TerminalLimits

SHELL = ["/bin/bash", "--noprofile", "--norc", "--noediting", "-i"]
ENV = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "PS1": "$ ", "LANG": "C.UTF-8"}


def bare_session() -> pexpect.spawn[bytes]:
    child: pexpect.spawn[bytes] = pexpect.spawn(
        SHELL[0], SHELL[1:], env={**ENV, "HOME": "/tmp"}, echo=False, encoding=None
    )
    child.delaybeforesend = None
    child.expect_exact(b"$ ")
    return child


def tidegate_session(spill: Path) -> Terminal:
    term = Terminal(
        SHELL,
        launched=host_launch(Clearance.user()),  # the benchmark's own shell
        cwd=Path("/tmp"),
        env={**ENV, "HOME": "/tmp"},
        limits=TerminalLimits(),
        spill=spill,
        echo=False,
    )
    term.wait_for("$ ")
    return term


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "min_ms": ordered[0] * 1000,
        "p90_ms": ordered[int(len(ordered) * 0.9) - 1] * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tidegate-bench-pty-"))
    start: dict[str, list[float]] = {"bare": [], "tidegate": []}
    for n in range(args.sessions):
        t0 = time.perf_counter()
        child = bare_session()
        start["bare"].append(time.perf_counter() - t0)
        child.close(force=True)
        t0 = time.perf_counter()
        term = tidegate_session(scratch / f"s{n}.log")
        start["tidegate"].append(time.perf_counter() - t0)
        term.close()
    turn: dict[str, list[float]] = {"bare": [], "tidegate": []}
    child = bare_session()
    term = tidegate_session(scratch / "turns.log")
    for n in range(args.turns):
        t0 = time.perf_counter()
        child.sendline(f"echo turn-{n}-done".encode())
        child.expect_exact(f"turn-{n}-done".encode())
        turn["bare"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        term.send_line(f"echo turn-{n}-done")
        term.wait_for(f"turn-{n}-done")
        turn["tidegate"].append(time.perf_counter() - t0)
    child.close(force=True)
    term.close()
    result: dict[str, dict[str, Any]] = {
        "startup": {k: stats(v) for k, v in start.items()},
        "turn": {k: stats(v) for k, v in turn.items()},
    }
    for phase in ("startup", "turn"):
        result[phase]["ratio"] = (
            result[phase]["tidegate"]["median_ms"] / result[phase]["bare"]["median_ms"]
        )
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(
        f"PTY driver, {args.sessions} sessions, {args.turns} turns (load: {os.getloadavg()[0]:.1f})"
    )
    for phase in ("startup", "turn"):
        for who in ("bare", "tidegate"):
            s = result[phase][who]
            print(
                f"  {phase:<8} {who:<9} median {s['median_ms']:7.2f} ms  min {s['min_ms']:7.2f}  p90 {s['p90_ms']:7.2f}"
            )
        print(f"  {phase:<8} ratio     {result[phase]['ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
