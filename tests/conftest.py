"""Shared fixtures: real git repositories in temporary directories.

Git gets an isolated configuration (no system or user config) with a fixed identity, so
the suite behaves the same on every machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidegate.flow.pipeline import PhaseObserver
from tidegate.flow.transaction import execute
from tidegate.records.modes import Mode
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest

ROOT = Path(__file__).resolve().parents[1]
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
"""``calc.py`` of ``committed_repo``: ``add`` has the bug the tests fix."""


@pytest.fixture(scope="session", autouse=True)
def session_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The OS temp dir of the suite and every process it starts: a directory of this pytest
    session, so what the tests' runs leave there (shadows of runs left interrupted, scratch
    and sandbox dirs, the sessions of the pytest a VERIFY command runs) goes with pytest's
    own old sessions, and the machine's ``/tmp`` is left as it was."""
    temp = tmp_path_factory.getbasetemp() / "tmp"
    temp.mkdir()
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(temp)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield temp
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before
    tempfile.tempdir = None


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    config = home / ".gitconfig"
    config.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("TIDEGATE_FAULT", raising=False)
    monkeypatch.setenv("TIDEGATE_FORBID_MODEL_NETWORK", "1")  # no test may reach a real model
    # Run records go to a per-test state root, never the user's own.
    monkeypatch.setenv("TIDEGATE_STATE_ROOT", str(tmp_path_factory.mktemp("state")))


def git(root: Path, *args: str, input: bytes | None = None) -> str:
    res = subprocess.run(["git", *args], cwd=root, input=input, capture_output=True, check=False)
    if res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {res.stderr.decode()}")
    return res.stdout.decode("utf-8", "surrogateescape")


class Repo:
    """A real git repository in a temp dir, with helpers to shape its dirty state."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def git(self, *args: str, input: bytes | None = None) -> str:
        return git(self.root, *args, input=input)

    def write(self, path: str, content: str | bytes, mode: int | None = None) -> Path:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8", newline="")
        else:
            target.write_bytes(content)
        if mode is not None:
            target.chmod(mode)
        return target

    def read(self, path: str) -> str:
        return (self.root / path).read_text(encoding="utf-8")

    def commit_all(self, message: str = "commit") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def status(self) -> str:
        return self.git("status", "--porcelain=v1", "--untracked-files=all")

    def index_bytes(self) -> bytes:
        return (self.root / ".git" / "index").read_bytes()

    def tree_state(self, with_mtimes: bool = False) -> dict[str, object]:
        """Every file, symlink and directory under the root except .git: bytes, modes,
        link targets and (optionally) mtimes; plus the index file's bytes."""
        state: dict[str, object] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = os.path.relpath(dirpath, self.root)
            if rel_dir == ".git" or rel_dir.startswith(".git" + os.sep):
                dirnames[:] = []
                continue
            if ".git" in dirnames:
                dirnames.remove(".git")
            st = os.lstat(dirpath)
            state[f"dir:{rel_dir}"] = (st.st_mode, st.st_mtime_ns if with_mtimes else None)
            for name in filenames + [
                d for d in dirnames if os.path.islink(os.path.join(dirpath, d))
            ]:
                full = os.path.join(dirpath, name)
                rel = os.path.normpath(os.path.join(rel_dir, name))
                st = os.lstat(full)
                if os.path.islink(full):
                    state[rel] = ("link", os.readlink(full))
                else:
                    with open(full, "rb") as fh:
                        data = fh.read()
                    state[rel] = (st.st_mode, data, st.st_mtime_ns if with_mtimes else None)
        index = self.root / ".git" / "index"
        state["<index>"] = index.read_bytes() if index.exists() else None
        return state

    def run(
        self,
        objective: str,
        verify: str | None = None,
        mode: Mode = Mode.PATCH,
        planner: str = "structured",
        max_attempts: int = 3,
        observer: PhaseObserver | None = None,
        **kwargs: object,
    ) -> FlowReport:
        request = RunRequest(
            repo=self.root,
            mode=mode,
            objective=objective,
            objective_base=self.root,
            verify=verify,
            planner=planner,
            max_attempts=max_attempts,
            **kwargs,  # type: ignore[arg-type]
        )
        return execute(request, observer=observer)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    root = tmp_path / "work"
    root.mkdir()
    r = Repo(root)
    r.git("init", "-q")
    yield r


@pytest.fixture
def committed_repo(repo: Repo) -> Repo:
    """A repository with a small committed Python project."""
    repo.write("calc.py", CALC)
    repo.write("README.md", "# calc\n")
    repo.write(".gitignore", ".env\nbuild/\n__pycache__/\n")
    repo.commit_all("initial")
    return repo


def tidegate_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tidegate", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=input,
        capture_output=True,
        text=True,
        check=False,
    )


# -- containment ---------------------------------------------------------------------------
# Tests that need verified containment (bubblewrap) carry ``requires_containment``. Without
# it they skip with one reason, so a fresh machine's `make test` passes and says why; the
# tests of the uncontained policy (approval required, `backend: none`) run everywhere. In
# CI (``CI`` set) a failing probe is an error instead: CI must test containment.

CONTAINMENT_MISSING = "bubblewrap is not installed or cannot run here: `apt-get install bubblewrap`"


def containment_verified() -> bool:
    from tidegate.exec.containment import probe

    return probe().verified


requires_containment = pytest.mark.skipif(not containment_verified(), reason=CONTAINMENT_MISSING)


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") and not containment_verified():
        from tidegate.exec.containment import probe

        raise pytest.UsageError(
            f"CI is set but the containment probe failed ({probe().reason}); "
            "CI must run the containment tests: install bubblewrap"
        )


def pytest_report_header() -> str:
    if containment_verified():
        return "containment: bubblewrap verified (the containment tests run)"
    return f"containment: {CONTAINMENT_MISSING}; tests marked requires_containment skip"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One closing line that says how many tests the missing bubblewrap skipped (the
    header line is hidden under ``-q``, which ``make test`` uses)."""
    skipped = [
        r
        for r in terminalreporter.stats.get("skipped", [])
        if CONTAINMENT_MISSING in str(getattr(r, "longrepr", ""))
    ]
    if skipped:
        terminalreporter.write_line(
            f"containment: {len(skipped)} test(s) skipped: {CONTAINMENT_MISSING}"
        )
