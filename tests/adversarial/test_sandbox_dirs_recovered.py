"""A run SIGKILLed while its verification runs under bubblewrap leaves containment's
private directory (``tidegate-sandbox-*``, the command's TMPDIR and HOME) in the OS temp
dir: nothing of the run is left to remove it. ``tidegate recover`` removes it once no live
process owns it, and never one a live command is using; a symlink or a file planted at
such a name, or another prefix, is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration._store import cli
from tidegate.disk.owners import SANDBOX_PREFIX, owned_prefix, owner_in_name, process_start
from tidegate.workspace.owned_temp import UNNAMED_SANDBOX_GRACE_S, remove_dead_sandboxes

OLD = time.time() - UNNAMED_SANDBOX_GRACE_S - 60


def _sandboxes(tmp: Path) -> list[Path]:
    return sorted(tmp.glob(f"{SANDBOX_PREFIX}*"))


def _wait(condition: object, what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _recover(repo: Path, tmp: Path) -> dict[str, object]:
    code, summary, err = cli("recover", cwd=repo, env={"TMPDIR": str(tmp)})
    assert code == 0 and isinstance(summary, dict), err
    return summary


def _used_by_a_process(path: Path) -> bool:
    raw = os.fsencode(path)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if raw in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


@requires_containment
def test_a_killed_runs_sandbox_dir_is_removed_and_a_live_ones_kept(
    committed_repo: Repo, repo_factory: Repo, tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "run", "--objective",
         "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
         "--verify", "sleep 120", "--containment", "required"],
        cwd=committed_repo.root, env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # the process's sandbox dir, holding one command's own (its TMPDIR and HOME)
        _wait(lambda: any(d.glob("*/home") for d in _sandboxes(tmp)), "the sandbox dir")
        [sandbox] = _sandboxes(tmp)
        _wait(lambda: _used_by_a_process(sandbox), "bubblewrap to start")
        # Old enough to be a leftover by age alone: only the live command keeps it.
        os.utime(sandbox, (OLD, OLD))
        summary = _recover(repo_factory.root, tmp)  # the run holds its own repo's lock
        assert summary["removed_sandboxes"] == []
        assert any(sandbox.glob("*/home"))
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    _wait(lambda: not _used_by_a_process(sandbox), "bubblewrap to die with its parent")
    assert sandbox.is_dir()  # nothing of the killed run removed it
    if owner_in_name(sandbox.name, SANDBOX_PREFIX) is None:
        # Named as launch names it today: no owner in the name, so recover also wants it
        # older than a grace period. Named with its owner, it goes at once.
        os.utime(sandbox, (OLD, OLD))

    summary = _recover(committed_repo.root, tmp)

    assert summary["removed_sandboxes"] == [str(sandbox)]
    assert _sandboxes(tmp) == []


def test_a_sandbox_dir_named_by_its_owner_goes_when_the_owner_is_dead(tmp_path: Path) -> None:
    """The naming proposed for ``launch`` (``owners.owned_prefix``): no grace needed."""
    mine = tmp_path / f"{owned_prefix(SANDBOX_PREFIX)}live0001"
    mine.mkdir()
    child = subprocess.Popen(["sleep", "30"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    dead = tmp_path / f"{SANDBOX_PREFIX}{child.pid}-{start}-dead0001"
    (dead / "home").mkdir(parents=True)
    (dead / "home" / "ro").mkdir()
    (dead / "home" / "ro").chmod(0o500)  # what a command may leave read-only
    reused = tmp_path / f"{SANDBOX_PREFIX}{os.getpid()}-{int(start or 0) + 1}-reused01"
    reused.mkdir()  # this pid, but not this process: dead

    assert remove_dead_sandboxes(tmp_path) == sorted([str(dead), str(reused)])
    assert mine.is_dir()


def test_young_planted_or_foreign_entries_are_left_alone(tmp_path: Path) -> None:
    young = tmp_path / f"{SANDBOX_PREFIX}young001"
    young.mkdir()  # its owner may be between making it and starting bubblewrap
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's\n")
    planted = tmp_path / f"{SANDBOX_PREFIX}planted1"
    planted.symlink_to(outside)
    afile = tmp_path / f"{SANDBOX_PREFIX}afile001"
    afile.write_text("x")
    other = tmp_path / "tidegate-other-old00001"
    other.mkdir()
    for path in (outside, other):
        os.utime(path, (OLD, OLD))
    os.utime(planted, (OLD, OLD), follow_symlinks=False)

    assert remove_dead_sandboxes(tmp_path) == []
    assert young.is_dir() and afile.is_file() and other.is_dir()
    assert (outside / "keep.txt").read_text() == "the user's\n" and planted.is_symlink()


@pytest.fixture
def repo_factory(tmp_path: Path) -> Repo:
    root = tmp_path / "other"
    root.mkdir()
    other = Repo(root)
    other.git("init", "-q")
    other.write("a.txt", "a\n")
    other.commit_all()
    return other
