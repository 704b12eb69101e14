"""Startup time of the read-only commands against the interpreter's own startup.

Prints, from one run, the median wall time (and the median CPU time, user + system, which
a busy machine disturbs less) of ``python -c pass``, ``tidegate --help``, ``tidegate
runs`` and ``tidegate read latest``, and each command's ratio to ``python -c pass`` (issue
#12's target: at most 3x); ``tidegate run --help`` too, the start of an engine command
(typer and the engine commands alone, not the command groups). The commands run interleaved, ``--repeat`` times each, after
one untimed round, in a temporary repository whose temporary state root holds a few
recorded runs.

``--src DIR`` puts DIR first on PYTHONPATH, to time another checkout's ``src/`` (an older
commit) with the same interpreter.

``--cached-bytecode`` lets every command (``python -c pass`` too) keep its compiled
bytecode, in a temporary ``PYTHONPYCACHEPREFIX``, as an installed package does: where
``PYTHONDONTWRITEBYTECODE`` is set (as on the project's VM) the source of every module
that has no cached bytecode, tidegate's own included, is compiled again on every start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "tidegate --help": ["{tidegate}", "--help"],
    "tidegate runs": ["{tidegate}", "runs"],
    "tidegate read latest": ["{tidegate}", "read", "latest"],
    "tidegate run --help": ["{tidegate}", "run", "--help"],
}
"""Each run as ``PYTHON ARGS``; ``{tidegate}`` is the console script next to PYTHON (what a
user runs), or ``-m tidegate`` when there is none."""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"startup: {' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def recorded_repo(root: Path, python: str, env: dict[str, str], runs: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-q", "-m", "calc"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    for _ in range(runs):
        subprocess.run(
            [python, "-m", "tidegate", "run", "--objective", FIX, "--verify", "true"],
            cwd=repo, env=env, check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    return repo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20, help="timed runs of each (default 20)")
    ap.add_argument("--runs", type=int, default=3, help="recorded runs in the store (default 3)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter (default: this)")
    ap.add_argument("--src", type=Path, help="a src/ directory to put first on PYTHONPATH")
    ap.add_argument(
        "--cached-bytecode",
        action="store_true",
        help="keep compiled bytecode between runs (in a temporary PYTHONPYCACHEPREFIX)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="tidegate-bench-startup-") as tmp:
        env = {**os.environ, "TIDEGATE_STATE_ROOT": str(Path(tmp) / "state"), "COLUMNS": "80"}
        (Path(tmp) / "state").mkdir()
        if args.src is not None:
            env["PYTHONPATH"] = str(args.src.resolve())
        if args.cached_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        repo = recorded_repo(Path(tmp), args.python, env, args.runs)
        script = Path(args.python).parent / "tidegate"
        entry = [str(script)] if script.is_file() else ["-m", "tidegate"]
        wall: dict[str, list[float]] = {name: [] for name in COMMANDS}
        cpu: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for round_ in range(args.repeat + 1):
            for name, argv in COMMANDS.items():
                expanded = [e for a in argv for e in (entry if a == "{tidegate}" else [a])]
                w, c = timed([args.python, *expanded], repo, env)
                if round_:  # the first round warms the caches, untimed
                    wall[name].append(w)
                    cpu[name].append(c)

    base_wall = statistics.median(wall["python -c pass"])
    base_cpu = statistics.median(cpu["python -c pass"])
    result = {
        name: {
            "wall_ms": round(statistics.median(wall[name]) * 1000, 1),
            "cpu_ms": round(statistics.median(cpu[name]) * 1000, 1),
            "wall_ratio": round(statistics.median(wall[name]) / base_wall, 2),
            "cpu_ratio": round(statistics.median(cpu[name]) / base_cpu, 2),
        }
        for name in COMMANDS
    }
    if args.json:
        summary = {"repeat": args.repeat, "cached_bytecode": args.cached_bytecode}
        print(json.dumps({**summary, "commands": result}, indent=2))
        return 0
    cached = "; bytecode cached" if args.cached_bytecode else ""
    print(f"median of {args.repeat} runs each ({args.python}; {args.runs} recorded runs{cached})")
    print(f"{'':22}{'wall':>10}{'ratio':>8}{'cpu':>10}{'ratio':>8}")
    for name, r in result.items():
        print(
            f"{name:22}{r['wall_ms']:>8.1f}ms{r['wall_ratio']:>7.2f}x"
            f"{r['cpu_ms']:>8.1f}ms{r['cpu_ratio']:>7.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
