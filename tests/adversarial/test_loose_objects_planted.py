"""Links planted in ``.git/objects`` (a command of an uncontained run could plant them):
tidegate's own object writer (``workspace.loose``) never writes or freshens through them,
and leaves such an object to git, whose object store it is."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests._git_calls import record_git_calls
from tests.conftest import Repo
from tidegate.workspace.loose import write_blob
from tidegate.workspace.repo import discover

DATA = b"the run's request, say\n"
OID = hashlib.sha1(b"blob %d\0" % len(DATA) + DATA).hexdigest()


def _objects(repo: Repo) -> Path:
    return repo.root / ".git" / "objects"


def test_a_linked_object_directory_is_not_written_through(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (_objects(committed_repo) / OID[:2]).symlink_to(elsewhere)
    repo = discover(committed_repo.root)
    calls = record_git_calls(monkeypatch)
    assert write_blob(repo, DATA) == OID
    assert calls == ["hash-object"]  # git's to write, as it writes everything there
    assert committed_repo.git("cat-file", "blob", OID).encode() == DATA


def test_a_link_at_the_objects_name_is_neither_followed_nor_taken_for_the_object(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("not an object\n")
    directory = _objects(committed_repo) / OID[:2]
    directory.mkdir(exist_ok=True)
    (directory / OID[2:]).symlink_to(victim)
    repo = discover(committed_repo.root)
    calls = record_git_calls(monkeypatch)
    write_blob(repo, DATA)  # whatever git makes of it: it is git's call
    assert calls == ["hash-object"]
    assert victim.read_text() == "not an object\n"
