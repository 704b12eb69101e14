"""``tidegate.cli.runcmd.parse``: the typer-free parser of ``run``/``review``/``debug``
gives the command body exactly the values typer would, and hands every command line it is
not sure of to typer (before doing anything)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tidegate.cli import runcmd

typer_app = importlib.import_module("tidegate.cli.app")  # the module, not the package's `app`

PLAIN = [
    ["run", "--objective", "x"],
    [
        "run",
        "--repo",
        "/tmp/r",
        "--objective=x",
        "--verify",
        "pytest -q",
        "--json",
        "--warm-shadow",
    ],
    [
        "run",
        "--objective",
        "x",
        "--max-attempts",
        "5",
        "--verify-timeout",
        "30.5",
        "--containment",
        "none",
        "--network",
        "--keep-shadow",
    ],
    ["run", "--objective", "x", "--mode", "review"],
    ["run", "--objective", "x", "--mode=debug", "--planner", "scripted:plan.json"],
    [
        "run",
        "--objective",
        "x",
        "--model",
        "scripted:p",
        "--sub-agent",
        "tidegate",
        "--sub-agent=codex",
        "--max-cost",
        "0",
        "--max-steps",
        "3",
        "--agent-model",
        "m",
        "--state-root",
        "/s",
        "--agent",
        "aider",
    ],
    ["review", "--objective", "x", "--verify", "true", "--warm-shadow", "--max-cost", "1.5"],
    ["review", "--verify", "true"],
    ["debug", "--objective-file", "f.txt", "--max-attempts", "2", "--keep-shadow", "--hold"],
    ["run", "--objective", "a", "--objective", "b", "--repo", "x", "--repo", "y"],
    ["run", "--objective", "--json"],
    ["run", "--objective", "-", "--verify", "--network"],
    ["run", "--objective", ""],
    ["run", "--objective-file", "-", "--max-attempts", "020"],
    ["run", "--objective", "x", "--verify-timeout", "1"],
    ["run", "--objective", "x", "--otlp", "http://127.0.0.1:4318", "--json"],
]

REFUSED = [
    ["run", "--help"],
    ["run", "--objective", "x", "--help"],
    ["run", "--objective", "--help"],
    ["run", "--objective", "x", "--bogus"],
    ["run", "--objective", "x", "positional"],
    ["run", "--objective", "x", "--"],
    ["run", "-h"],
    ["run", "--max-attempts", "abc"],
    ["run", "--max-attempts", "0"],
    ["run", "--max-attempts", "21"],
    ["run", "--max-attempts", " 3"],
    ["run", "--verify-timeout", "1e3"],
    ["run", "--verify-timeout", "0.5"],
    ["run", "--verify-timeout", "nan"],
    ["run", "--max-cost", "-1"],
    ["run", "--json=1"],
    ["run", "--containment", "AUTO"],
    ["run", "--mode", "Patch"],
    ["run", "--objective"],
    ["run", "--repo", ""],
    ["run", "--objective", "x", "--sub-agent"],
    ["review", "run", "X"],
    ["review", "--objective", "x", "--max-attempts", "2"],
    ["review", "--objective", "x", "--mode", "patch"],
    ["debug", "--objective", "x", "--mode", "patch"],
    ["review", "--objective", "x", "--otlp", "http://127.0.0.1:4318"],
    ["run", "--objective", "caf\udcc3"],
    ["runs"],
    [],
]


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def fake(*args: Any, **kwargs: Any) -> int:
        calls.append((args, kwargs))
        return 0

    monkeypatch.setattr(runcmd, "run_command", fake)  # both paths end in runcmd.invoke
    return calls


@pytest.mark.parametrize("args", PLAIN, ids=lambda a: " ".join(a)[:60])
def test_the_fast_parser_gives_what_typer_gives(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _captured(monkeypatch)
    assert typer_app.main(list(args)) == 0
    assert runcmd.dispatch(list(args)) == 0
    assert len(calls) == 2, calls
    assert calls[0] == calls[1]


@pytest.mark.parametrize("args", REFUSED, ids=lambda a: " ".join(a)[:60])
def test_what_it_is_not_sure_of_goes_to_typer(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _captured(monkeypatch)
    assert runcmd.parse(list(args)) is None
    assert runcmd.dispatch(list(args)) is None
    assert calls == []


def test_a_plain_run_never_imports_typer(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tidegate.cli import runcmd\n"
        "runcmd.run_command = lambda *a, **k: 7\n"
        "from tidegate import cli\n"
        "code = cli.main(['run', '--objective', 'x', '--json'])\n"
        "print(code, 'typer' in sys.modules, 'click' in sys.modules)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert res.stdout.split() == ["7", "False", "False"], res.stderr
