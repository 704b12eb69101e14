"""A run's long-lived ``cat-file --batch`` and ``update-ref --stdin``
(``Git.kept_processes``): they answer exactly what a process per read or update would, and
any trouble with them means a call the usual way, never a wrong answer."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.errors import GitError
from tidegate.git.command import Git

CONTENTS = [
    b"",
    b"one line\n",
    b"no newline",
    b"\n\n\x00binary\nwith newlines\x00",
    os.urandom(300_000),
]


def _blobs(repo: Repo) -> list[str]:
    return [repo.git("hash-object", "-w", "--stdin", input=data).strip() for data in CONTENTS]


def _pid(git: Git, kind: str) -> int:
    assert git._kept is not None
    proc = git._kept[kind]._proc
    assert proc is not None
    return proc.pid


def _reader_pid(git: Git) -> int:
    return _pid(git, "_BatchReader")


def test_reads_through_it_are_the_reads_without_it(repo: Repo) -> None:
    blobs = _blobs(repo)
    git = Git(repo.root)
    plain = git.read_blobs(blobs)
    with git.kept_processes():
        assert git.read_blobs(blobs) == plain == dict(zip(blobs, CONTENTS, strict=True))
        pid = _reader_pid(git)
        assert [git.blob_bytes(b) for b in blobs] == CONTENTS
        assert _reader_pid(git) == pid  # one process for all of it
    assert git._kept is None
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid)


def test_a_missing_object_is_an_error_and_the_reader_goes_on(repo: Repo) -> None:
    [blob, *_] = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        assert git.blob_bytes(blob) == CONTENTS[0]
        pid = _reader_pid(git)
        with pytest.raises(GitError, match="missing"):
            git.blob_bytes("0" * 40)
        assert git.blob_bytes(blob) == CONTENTS[0]
        assert _reader_pid(git) == pid


def test_a_blob_read_of_another_object_is_refused_as_without_it(repo: Repo) -> None:
    repo.write("f.txt", "text\n")
    repo.commit_all()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    git = Git(repo.root)
    with git.kept_processes():
        with pytest.raises(GitError):
            git.blob_bytes(tree)  # `cat-file blob` of a tree
        assert git.read_blobs([tree])[tree]  # a batch read takes any object, as before


def test_names_that_are_not_object_ids_are_read_the_usual_way(repo: Repo) -> None:
    repo.write("f.txt", "text\n")
    repo.commit_all()
    git = Git(repo.root)
    with git.kept_processes():
        # a name with a newline would be two requests to a batch process
        assert git.blob_bytes("HEAD:f.txt") == b"text\n"
        with pytest.raises(GitError):
            git.blob_bytes("HEAD:f.txt\nHEAD:f.txt")


def test_a_reader_killed_under_it_means_reads_the_usual_way(repo: Repo) -> None:
    blobs = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        assert git.blob_bytes(blobs[0]) == CONTENTS[0]
        os.killpg(_reader_pid(git), signal.SIGKILL)
        assert git.read_blobs(blobs) == dict(zip(blobs, CONTENTS, strict=True))
        assert git.blob_bytes(blobs[1]) == CONTENTS[1]


def test_nested_uses_share_one_reader(repo: Repo) -> None:
    blobs = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        assert git.blob_bytes(blobs[0]) == CONTENTS[0]
        pid = _reader_pid(git)
        with git.kept_processes():
            assert git.blob_bytes(blobs[0]) == CONTENTS[0]
            assert _reader_pid(git) == pid
        assert _reader_pid(git) == pid  # the inner use did not end it
        assert git.blob_bytes(blobs[1]) == CONTENTS[1]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _writer_pid(git: Git) -> int:
    return _pid(git, "_RefWriter")


def test_ref_updates_are_done_on_return_and_share_one_process(repo: Repo) -> None:
    blobs = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        git.update_ref("refs/tidegate/test/first", blobs[0])
        pid = _writer_pid(git)
        for i, blob in enumerate(blobs):
            git.update_ref(f"refs/tidegate/test/{i}", blob)
            assert repo.git("rev-parse", f"refs/tidegate/test/{i}").strip() == blob
        git.update_ref("refs/tidegate/test/0", blobs[1])  # an update of an existing ref
        assert repo.git("rev-parse", "refs/tidegate/test/0").strip() == blobs[1]
        assert _writer_pid(git) == pid
    assert git._kept is None


def test_a_refused_update_is_git_s_error_and_later_ones_still_land(repo: Repo) -> None:
    [blob, *_] = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        with pytest.raises(GitError):
            git.update_ref("refs/tidegate/a..b", blob)  # git refuses the name
        with pytest.raises(GitError):
            git.update_ref("refs/tidegate/x", "1" * 40)  # no such object
        git.update_ref("refs/tidegate/ok", blob)
        assert repo.git("rev-parse", "refs/tidegate/ok").strip() == blob


def test_a_writer_killed_under_it_means_updates_the_usual_way(repo: Repo) -> None:
    [blob, *_] = _blobs(repo)
    git = Git(repo.root)
    with git.kept_processes():
        git.update_ref("refs/tidegate/before", blob)
        os.killpg(_writer_pid(git), signal.SIGKILL)
        git.update_ref("refs/tidegate/after", blob)
        assert repo.git("rev-parse", "refs/tidegate/after").strip() == blob


def test_nothing_is_started_before_it_is_needed(repo: Repo) -> None:
    git = Git(repo.root)
    with git.kept_processes():
        assert git._kept == {}


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "one-shot"])
def test_refs_are_created_together_or_not_at_all(committed_repo: Repo, kept: bool) -> None:
    git = Git(committed_repo.root)
    head = committed_repo.git("rev-parse", "HEAD").strip()
    tree = committed_repo.git("rev-parse", "HEAD^{tree}").strip()
    with contextlib.ExitStack() as stack:
        if kept:
            stack.enter_context(git.kept_processes())
        git.create_refs([("refs/tidegate/t/a", head), ("refs/tidegate/t/b", tree)])
        assert committed_repo.git("rev-parse", "refs/tidegate/t/a").strip() == head
        assert committed_repo.git("rev-parse", "refs/tidegate/t/b").strip() == tree
        # "create": a ref that exists refuses the whole transaction, in git's words
        with pytest.raises(GitError, match="refs/tidegate/t/a"):
            git.create_refs([("refs/tidegate/t/c", head), ("refs/tidegate/t/a", tree)])
        listed = subprocess.run(
            ["git", "show-ref", "refs/tidegate/t/c"], cwd=committed_repo.root, capture_output=True
        )
        assert listed.returncode == 1 and not listed.stdout
        assert committed_repo.git("rev-parse", "refs/tidegate/t/a").strip() == head
        git.update_ref("refs/tidegate/t/d", head)  # the writer goes on (a new one if need be)
        assert committed_repo.git("rev-parse", "refs/tidegate/t/d").strip() == head


def test_sizes_come_from_the_kept_reader_as_from_batch_check(committed_repo: Repo) -> None:
    git = Git(committed_repo.root)
    blobs = _blobs(committed_repo)
    alone = git.blob_sizes(blobs)
    assert alone == {b: len(data) for b, data in zip(blobs, CONTENTS, strict=True)}
    with git.kept_processes():
        assert git.blob_sizes(blobs) == alone
        pid = _reader_pid(git)
        with pytest.raises(GitError, match="missing"):
            git.blob_sizes(["1" * 40])
        assert git.blob_bytes(blobs[1]) == CONTENTS[1]  # in step after the miss
        assert _reader_pid(git) == pid


def test_a_git_without_batch_command_reads_the_one_shot_way(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older git refuses ``--batch-command``: its kept process ends at once, and every
    read is still answered, by a call of its own."""
    git = Git(committed_repo.root)
    blobs = _blobs(committed_repo)
    original = Git._helper

    def older(self: Git, kind: type, *args: str) -> object:
        if args == ("cat-file", "--batch-command"):
            args = ("cat-file", "--no-such-batch-mode")
        return original(self, kind, *args)

    monkeypatch.setattr(Git, "_helper", older)
    with git.kept_processes():
        assert git.read_blobs(blobs) == dict(zip(blobs, CONTENTS, strict=True))
        assert git.blob_sizes(blobs) == {b: len(d) for b, d in zip(blobs, CONTENTS, strict=True)}
        assert git.blob_bytes(blobs[2]) == CONTENTS[2]
