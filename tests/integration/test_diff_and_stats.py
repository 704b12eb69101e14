"""VALIDATE's one ``diff-tree --raw --numstat`` gives what the two separate calls gave:
the same path changes and the same line counts and binary paths."""

from __future__ import annotations

import subprocess

from tests.conftest import Repo
from tidegate.git.command import Git
from tidegate.git.settings import no_index
from tidegate.validate.policy import ChangeStats, diff_and_stats
from tidegate.workspace.changes import diff_trees


def _separate_stats(git: Git, old: str, new: str) -> ChangeStats:
    out = git.run("diff-tree", "-r", "-z", "--no-renames", "--numstat", old, new, env=no_index())
    added = removed = 0
    binary = []
    for field in out.stdout.split(b"\0"):
        if field and b"\t" in field:
            a, r, path = field.split(b"\t", 2)
            if a == b"-":
                binary.append(path.decode("utf-8", "surrogateescape"))
            else:
                added, removed = added + int(a), removed + int(r)
    return ChangeStats(added, removed, tuple(binary))


def test_one_call_gives_both(committed_repo: Repo) -> None:
    r = committed_repo
    r.write("keep.txt", "a\nb\nc\n")
    r.write("gone.txt", "bye\n")
    r.write("tool.sh", "#!/bin/sh\n")
    r.write("data.bin", b"\x00\x01binary\x00")
    r.write(":colon first.txt", "odd name\n")
    r.write("tab\there.txt", "tab in name\n")
    old = r.commit_all("before")
    r.write("keep.txt", "a\nB\nc\nd\n")
    (r.root / "gone.txt").unlink()
    (r.root / "tool.sh").chmod(0o755)
    r.write("data.bin", b"\x00\x02binary changed\x00")
    r.write(":colon first.txt", "odd name, edited\n")
    r.write("tab\there.txt", "tab in name, edited\n")
    r.write("new/dir/file.py", "x = 1\n")
    (r.root / "link").symlink_to("keep.txt")
    subprocess.run(["git", "mv", "README.md", "READ.md"], cwd=r.root, check=True)
    new = r.commit_all("after")
    git = Git(r.root)
    changes, stats = diff_and_stats(git, old, new)
    assert changes == diff_trees(git, old, new)
    assert stats == _separate_stats(git, old, new)
    assert stats.binary == ("data.bin",) and stats.added > 0 and len(changes) == 10
