"""Attack: what concurrent runs share in ``<git-dir>/tidegate/`` -- the landing order
(``landed.log``) and the runs' registrations (``live/``) -- planted or forged by an
uncontained command of an earlier run.

A link at ``landed.log`` is never written through: the run's change still lands (it is
already written when the order is recorded) and the note says the order was not kept; the
file the link points at is untouched. A registration that no live process holds (a forged
record naming any pid, a link, a directory) is not a live run: ``status`` does not list
it, and nothing is written through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Repo, tidegate_cli
from tidegate.workspace.lock import live_runs

EDIT = "edit-file: README.md\nreplace: # calc\nwith: # calc!\n"
VICTIM = b"a file outside the repository\n"


def test_a_linked_landing_log_is_not_written_through(committed_repo: Repo, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    runtime = committed_repo.root / ".git" / "tidegate"
    runtime.mkdir()
    (runtime / "landed.log").symlink_to(victim)

    report = committed_repo.run(EDIT)

    assert report.status == "succeeded", report.message
    assert committed_repo.read("README.md") == "# calc!\n"
    assert victim.read_bytes() == VICTIM
    assert report.landing is not None and report.landing.seq is None
    assert any("landing order could not be recorded" in n for n in report.notes)


def test_forged_registrations_are_not_live_runs(committed_repo: Repo, tmp_path: Path) -> None:
    runtime = committed_repo.root / ".git" / "tidegate"
    live = runtime / "live"
    live.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    # A record naming this very test process (alive) but held by nobody.
    (live / "20990101-000000-forged.lock").write_text(
        json.dumps({"pid": os.getpid(), "run_id": "forged\x1b[31m", "since": 1.0})
    )
    (live / "20990101-000000-linked.lock").symlink_to(victim)
    (live / "20990101-000000-adir.lock").mkdir()

    assert live_runs(runtime) == []
    res = tidegate_cli("status", "--repo", str(committed_repo.root))
    assert res.returncode == 0, res.stderr
    assert "no tidegate run is running" in res.stdout and "\x1b" not in res.stdout
    assert victim.read_bytes() == VICTIM
    # The forged record was removed; the link and the directory are left for the user.
    assert not (live / "20990101-000000-forged.lock").exists()
    assert victim.read_bytes() == VICTIM

    # A run still starts and lands beside them.
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--objective", EDIT, "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert victim.read_bytes() == VICTIM


def test_a_live_runs_registration_cannot_be_taken_by_a_second_process(
    committed_repo: Repo,
) -> None:
    """Two processes claiming to be one run (a resume of a run still running): the
    second is refused, the first's record is unchanged."""
    runtime = committed_repo.root / ".git" / "tidegate"
    code = (
        "import sys, time; from pathlib import Path;"
        "from tidegate.workspace.lock import RunLock;"
        "RunLock(Path(sys.argv[1]), 'the-run').acquire(); print('held', flush=True);"
        "time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(runtime)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        record = (runtime / "live" / "the-run.lock").read_bytes()
        second = subprocess.run(
            [sys.executable, "-c", code, str(runtime)], capture_output=True, timeout=30
        )
        assert second.returncode != 0 and b"already running" in second.stderr
        assert (runtime / "live" / "the-run.lock").read_bytes() == record
        assert [r["pid"] for r in live_runs(runtime)] == [holder.pid]
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_status_never_loses_a_run_being_born(committed_repo: Repo) -> None:
    """``status`` (``live_runs``) asks every registration whether it is alive while runs
    start beside it: a run's registration is born locked (written under a random name,
    then renamed into place), so asking never takes one that is starting for a dead
    run's, never deletes it, and never makes a starting run look "already running"."""
    from tidegate.workspace.lock import RunLock

    runtime = committed_repo.root / ".git" / "tidegate"
    runtime.mkdir()
    code = (
        "import sys, time; from pathlib import Path;"
        "from tidegate.workspace.lock import live_runs;"
        "end = time.monotonic() + float(sys.argv[2]);"
        "print('go', flush=True)\n"
        "while time.monotonic() < end: live_runs(Path(sys.argv[1]))"
    )
    askers = [
        subprocess.Popen([sys.executable, "-c", code, str(runtime), "4"], stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    try:
        for asker in askers:
            assert asker.stdout is not None and asker.stdout.readline() == b"go\n"
        lost = 0
        for i in range(400):
            lock = RunLock(runtime, f"run-{i}").acquire()
            held = os.fstat(lock._fd)  # type: ignore[arg-type]
            try:
                named = os.stat(lock.path)
            except FileNotFoundError:
                lost += 1
            else:
                lost += (named.st_ino, named.st_dev) != (held.st_ino, held.st_dev)
            lock.release()
        assert lost == 0, f"{lost} of 400 registrations were deleted while their run lived"
    finally:
        for asker in askers:
            asker.communicate(timeout=30)
