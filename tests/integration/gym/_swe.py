"""Small SWE-bench-format instances built in a test: a real git repository (the mirror),
its base commit, a gold patch and a test patch made by git itself, and the grading run
through the real CLI in process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._operator import Result, op

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)
    return out.stdout.decode()


def _write(root: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = root / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def diff(repo: Path, files: dict[str, str | None]) -> str:
    """The patch that makes ``files`` so at HEAD (the work tree left as it was)."""
    _write(repo, files)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD")
    return patch


def make_instance(
    mirrors: Path,
    repo_name: str,
    base: dict[str, str],
    gold: dict[str, str | None],
    tests: dict[str, str | None],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    **extra: Any,
) -> dict[str, Any]:
    """An instance on a fresh mirror ``owner__name`` under ``mirrors``."""
    owner, name = repo_name.split("/")
    repo = mirrors / f"{owner}__{name}"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    _write(repo, base)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    commit = git(repo, "rev-parse", "HEAD").strip()
    return {
        "instance_id": f"{owner}__{name}-1", "repo": repo_name, "base_commit": commit,
        "problem_statement": "fix it", "patch": diff(repo, gold), "test_patch": diff(repo, tests),
        "FAIL_TO_PASS": json.dumps(fail_to_pass), "PASS_TO_PASS": json.dumps(pass_to_pass),
        "version": "0.1", **extra,
    }  # fmt: skip


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def grade(
    capsys: pytest.CaptureFixture[str],
    instances: Path,
    mirrors: Path,
    state: Path,
    *args: str,
) -> Result:
    return op(capsys, "gym", "swe", str(instances), "--repos", str(mirrors), "--state-root",
              str(state), "--allow-uncontained", "--json", *args)  # fmt: skip


CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    # the checkout's own conftest.py at the root: pytest puts the root on sys.path
    "conftest.py": "",
}
CALC_GOLD: dict[str, str | None] = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
}
CALC_TESTS: dict[str, str | None] = {
    "tests/test_calc.py": CALC["tests/test_calc.py"]
    + "\n\ndef test_add():\n    from calc import add\n\n    assert add(2, 3) == 5\n",
}


def calc_instance(mirrors: Path, name: str = "t/calc", **extra: Any) -> dict[str, Any]:
    """add() subtracts; FAIL_TO_PASS test_add, PASS_TO_PASS test_sub, in tests/ (pytest's
    rootdir insertion puts tests/ on the path; the root's conftest.py puts the root)."""
    base = {
        **CALC,
        "conftest.py": "import os, sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n",
    }
    return make_instance(
        mirrors, name, base, CALC_GOLD, CALC_TESTS,
        ["tests/test_calc.py::test_add"], ["tests/test_calc.py::test_sub"], **extra,
    )  # fmt: skip


@pytest.fixture(scope="session")
def swe_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Environments built once for the session (XDG_CACHE_HOME), not in the user's cache."""
    cache = tmp_path_factory.mktemp("swe-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache
