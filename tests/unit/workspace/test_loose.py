"""Objects written without git (``tidegate.workspace.loose``): git reads them as its own,
``git fsck --strict`` finds nothing, and every repository they could be wrong for gets
them from git instead."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.workspace.loose import objects_dir, write_blob, write_commit, write_object
from tidegate.workspace.repo import discover


def _fsck(root: Path) -> None:
    res = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=root, capture_output=True, text=True
    )
    assert res.returncode == 0 and not res.stdout.strip(), res.stdout + res.stderr


def test_a_blob_is_the_one_git_would_write(committed_repo: Repo) -> None:
    repo = discover(committed_repo.root)
    assert objects_dir(repo) is not None
    data = b"a request\n\x00 with a NUL and \xff bytes\n"
    oid = write_blob(repo, data)
    expected = subprocess.run(
        ["git", "hash-object", "--stdin"], cwd=committed_repo.root, input=data,
        capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    assert oid == expected
    shown = subprocess.run(
        ["git", "cat-file", "blob", oid], cwd=committed_repo.root, capture_output=True, check=True
    )
    assert shown.stdout == data
    path = committed_repo.root / ".git" / "objects" / oid[:2] / oid[2:]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444 & ~umask  # as git's own
    assert not list(path.parent.glob("tmp_obj_*"))
    _fsck(committed_repo.root)


def test_a_commit_is_a_valid_commit_on_its_parent(committed_repo: Repo) -> None:
    repo = discover(committed_repo.root)
    tree = committed_repo.git("rev-parse", "HEAD^{tree}").strip()
    oid = write_commit(repo, tree, repo.head, "tidegate T0 for run x")
    assert committed_repo.git("cat-file", "-t", oid).strip() == "commit"
    assert committed_repo.git("rev-parse", f"{oid}^{{tree}}").strip() == tree
    assert committed_repo.git("rev-parse", f"{oid}^").strip() == repo.head
    body = committed_repo.git("cat-file", "commit", oid)
    assert "\nauthor tidegate <tidegate@localhost> " in body
    assert body.endswith("\n\ntidegate T0 for run x\n")
    committed_repo.git("update-ref", "refs/tidegate/check", oid)  # reachable: fsck reads it
    _fsck(committed_repo.root)


def test_an_object_already_there_is_freshened_not_rewritten(committed_repo: Repo) -> None:
    repo = discover(committed_repo.root)
    objects = objects_dir(repo)
    assert objects is not None
    oid = write_object(objects, "blob", b"same bytes\n")
    path = objects / oid[:2] / oid[2:]
    os.utime(path, (1_000_000, 1_000_000))
    inode = path.stat().st_ino
    assert write_object(objects, "blob", b"same bytes\n") == oid
    assert path.stat().st_ino == inode and path.stat().st_mtime > 1_000_000


@pytest.mark.parametrize(
    "shape",
    ["shared at init", "shared later", "an include", "an fsync setting", "objects open to group"],
)
def test_repositories_git_must_write_for(repo: Repo, shape: str) -> None:
    if shape == "shared at init":
        repo.git("init", "-q", "--shared=group")
    elif shape == "shared later":
        repo.git("config", "core.sharedRepository", "group")
    elif shape == "an include":
        repo.git("config", "include.path", "other.config")
    elif shape == "an fsync setting":
        repo.git("config", "core.fsync", "loose-object")
    repo.write("a.txt", "a\n")
    repo.commit_all("one")
    if shape == "objects open to group":
        (repo.root / ".git" / "objects").chmod(0o775)
    found = discover(repo.root)
    assert objects_dir(found) is None
    oid = write_blob(found, b"through git\n")  # still written, by git
    assert repo.git("cat-file", "blob", oid) == "through git\n"


def test_a_sha256_repository_gets_its_objects_from_git(tmp_path: Path) -> None:
    root = tmp_path / "sha256"
    root.mkdir()
    made = subprocess.run(
        ["git", "init", "-q", "--object-format=sha256"], cwd=root, capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("this git has no SHA-256 repositories")
    r = Repo(root)
    r.write("a.txt", "a\n")
    r.commit_all("one")
    found = discover(root)
    assert objects_dir(found) is None
    tree = r.git("rev-parse", "HEAD^{tree}").strip()
    commit = write_commit(found, tree, found.head, "m")
    assert len(commit) == 64 and r.git("cat-file", "-t", commit).strip() == "commit"


def test_a_file_system_without_hard_links_gets_the_object_renamed_into_place(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = discover(committed_repo.root)
    objects = objects_dir(repo)
    assert objects is not None

    def no_links(*_args: object, **_kwargs: object) -> None:
        raise PermissionError("hard links are not supported here")

    monkeypatch.setattr(os, "link", no_links)
    oid = write_object(objects, "blob", b"renamed into place\n")
    assert committed_repo.git("cat-file", "blob", oid) == "renamed into place\n"
    assert not list((objects / oid[:2]).glob("tmp_obj_*"))


ZONES = [
    "UTC",
    "America/New_York",  # west of UTC: -0500 / -0400
    "Asia/Kolkata",  # east, with half an hour: +0530
    "America/St_Johns",  # west, with half an hour: -0330 / -0230
    "Asia/Kathmandu",  # +0545
    "Etc/GMT+5",  # POSIX's inverted sign: five hours *west*, -0500
    "Australia/Sydney",  # in summer time while the north is not (and the other way round)
    "Pacific/Chatham",  # +1245 / +1345
]


def _stamps(body: str) -> list[str]:
    """The ``<seconds> <zone>`` of the author and committer lines of a commit."""
    return [
        " ".join(line.rsplit(" ", 2)[1:])
        for line in body.splitlines()
        if line.startswith(("author ", "committer "))
    ]


@pytest.mark.parametrize("zone", ZONES)
def test_a_commit_carries_the_local_time_zone_as_git_writes_it(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    import time

    repo = discover(committed_repo.root)
    tree = committed_repo.git("rev-parse", "HEAD^{tree}").strip()
    try:
        with monkeypatch.context() as env:
            env.setenv("TZ", zone)
            time.tzset()
            ours = _stamps(
                committed_repo.git("cat-file", "commit", write_commit(repo, tree, repo.head, "m"))
            )
            git_made = committed_repo.git("commit-tree", tree, "-p", repo.head, "-m", "m").strip()
            theirs = _stamps(committed_repo.git("cat-file", "commit", git_made))
            seconds = int(ours[0].split()[0])
            offset = time.localtime(seconds).tm_gmtoff
    finally:
        time.tzset()  # the zone of the environment as it was
    minutes = abs(offset) // 60
    expected = f"{'-' if offset < 0 else '+'}{minutes // 60:02d}{minutes % 60:02d}"
    assert [s.split()[1] for s in ours] == [expected, expected]
    assert [s.split()[1] for s in theirs] == [expected, expected], "git writes the same zone"
    assert abs(int(theirs[0].split()[0]) - seconds) <= 2
