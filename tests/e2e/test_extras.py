"""A command that needs an optional extra says which one, in one line, exit 2, when the
extra's packages are not installed (blocked here the way a missing package fails: a
``None`` in ``sys.modules`` makes its import raise ``ModuleNotFoundError``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import Repo

BLOCKED = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "from tidegate.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def _run(blocked: str, *args: str, cwd: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED, blocked, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        # A loopback endpoint: the SDK is the first thing missing, not the network's leave.
        env={**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        (
            "openai,anthropic,httpx2",
            ["run", "--model", "openai:gpt-5", "--objective", "x", "--verify", "true"],
            "models",
        ),
        ("mcp,mcp_types,anyio", ["mcp", "serve", "--workspace", "."], "mcp"),
        ("acp", ["acp", "--model", "scripted:model.json"], "acp"),
    ],
    ids=["models", "mcp", "acp"],
)
def test_a_missing_extra_is_named_in_one_line(
    committed_repo: Repo, blocked: str, args: list[str], extra: str
) -> None:
    index = (committed_repo.root / ".git" / "index").read_bytes()
    done = _run(blocked, *args, cwd=committed_repo.root)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"tidegate: error: this needs the [{extra}] extra ("), line
    assert line.endswith(f"is not installed): pip install 'tidegate[{extra}]'"), line
    assert (committed_repo.root / ".git" / "index").read_bytes() == index


def test_another_missing_module_is_not_dressed_as_an_extra(committed_repo: Repo) -> None:
    """A module that is no extra's (here the project's own) is a bug: its traceback shows."""
    done = _run(
        "tidegate.flow.transaction",
        "run",
        "--objective",
        "x",
        "--verify",
        "true",
        cwd=committed_repo.root,
    )
    assert done.returncode != 0 and "Traceback" in done.stderr and "extra" not in done.stderr
