"""Attack: the user keeps a ``.env`` in a directory of mode 000. The mask's walk cannot
list it, so it cannot name the file; a contained command runs as the same user and does
``chmod 700 private && cat private/.env``. The directory the walk could not list is
covered whole by an empty read-only tmpfs, so the chmod fails and nothing is printed.

This machine's tests may run as root, and root lists a mode-000 directory anyway
(CAP_DAC_OVERRIDE): the directory is made mode 000 and, as root, the index's listing of it
is also made to fail with EACCES (its one listing function, ``_open_dir``), which is
what a non-root owner gets. Without the tmpfs mask the marker is printed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.workspace import secret_index

MARKER = "VW5saXN0YWJsZS1kaXItc2VjcmV0LTIwMjYtMTItMDI"


@pytest.fixture
def private(committed_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    place = committed_repo.root / "private"
    place.mkdir()
    (place / ".env").write_text(f"TOKEN={MARKER}\n")
    place.chmod(0)
    if os.geteuid() == 0:
        real = secret_index._open_dir

        def as_its_owner(path: str) -> int:
            if os.path.realpath(path) == os.path.realpath(place):
                raise PermissionError(13, "Permission denied", path)
            return real(path)

        monkeypatch.setattr(secret_index, "_open_dir", as_its_owner)
    yield place
    place.chmod(0o700)


@requires_containment
def test_a_contained_command_cannot_open_an_unlistable_directory(
    committed_repo: Repo, private: Path
) -> None:
    with executor(committed_repo.root, containment="required") as ex:
        run = ex.execute(
            call("command_run", command="chmod 700 private && cat private/.env; ls -a private")
        )
    assert run.ok and run.output is not None, run
    out = run.output
    assert MARKER not in out["stdout"] and MARKER not in out["stderr"], out
    assert str(private.resolve()) in out["containment"]["masked"]
    assert (private / ".env").read_text() == f"TOKEN={MARKER}\n"  # the user's file intact


@requires_containment
def test_a_directory_the_command_makes_unreadable_is_its_own(committed_repo: Repo) -> None:
    with executor(committed_repo.root, containment="required") as ex:
        run = ex.execute(
            call(
                "command_run",
                command="mkdir mine && echo ok > mine/f && chmod 000 mine && chmod 700 mine"
                " && cat mine/f",
            )
        )
    assert run.ok and run.output is not None, run
    assert run.output["stdout"] == "ok\n", run.output


@requires_containment
def test_an_unlistable_workspace_root_refuses_the_command(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = os.path.realpath(committed_repo.root)
    real = secret_index._open_dir

    def refused(path: str) -> int:
        if os.path.realpath(path) == root:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(secret_index, "_open_dir", refused)
    with executor(committed_repo.root, containment="required") as ex:
        run = ex.execute(call("command_run", command="echo ran > ran.txt"))
    assert not run.ok and run.error is not None, run
    assert run.error.code == "containment_unavailable", run.error
    assert "root cannot be listed" in run.error.message
    assert not (committed_repo.root / "ran.txt").exists()
