"""Shared helpers of the repository-shape attacks: the CLI run on bytes, diffs git itself
writes for a shape, and the "nothing changed" assertion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Repo


def cli(
    *args: str, cwd: Path, input: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real CLI, output kept as bytes: a path that is not UTF-8 must not be lost to the
    test's own decoding."""
    return subprocess.run(
        [sys.executable, "-m", "tidegate", *args],
        cwd=cwd,
        input=input,
        env={**os.environ, **(env or {})},
        capture_output=True,
        check=False,
    )


def report_of(res: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The ``--json`` report: strict UTF-8, strict JSON, one object, no traceback."""
    assert b"Traceback" not in res.stderr, res.stderr.decode("utf-8", "replace")
    text = res.stdout.decode("utf-8")  # strict: the report must be valid UTF-8
    report = json.loads(text)
    assert isinstance(report, dict)
    return report


def one_line_error(res: subprocess.CompletedProcess[bytes], code: int = 2) -> str:
    """A usage refusal: the exit code, nothing on stdout, one line on stderr."""
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == code, (res.returncode, res.stdout, err)
    assert b"Traceback" not in res.stderr, err
    assert err.count("\n") == 1 and err.startswith("tidegate: error: "), err
    return err


def diff_made_by_git(repo: Repo, tmp: Path, mutate: Callable[[Path], None]) -> bytes:
    """The diff git writes for ``mutate`` applied to a clone of HEAD: exactly what a model
    copying ``git diff`` would propose, quoting of odd names included."""
    clone = tmp / "diff-clone"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(repo.root), str(clone)], check=True)
    mutate(clone)
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    out = subprocess.run(
        ["git", "diff", "--cached", "--binary", "HEAD"],
        cwd=clone,
        check=True,
        capture_output=True,
    ).stdout
    assert out, "the mutation changed nothing"
    return out


def without_tidegate(state: dict[str, object]) -> dict[str, object]:
    """A tree_state without tidegate's own ``.tidegate/`` entries (rejects) and without the
    root directory's entry (creating ``.tidegate/`` changes it)."""
    return {
        k: v
        for k, v in state.items()
        if k != "dir:." and not k.removeprefix("dir:").startswith(".tidegate")
    }
