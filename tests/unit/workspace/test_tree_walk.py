"""``tree_walk.tree_entries`` against ``git ls-tree --full-tree`` itself, on trees with every
kind of entry: the same entries, modes and order, or None where git must answer."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests._git_calls import record_git_calls
from tests.conftest import Repo
from tidegate.workspace.repo import discover
from tidegate.workspace.tree_walk import tree_entries


def _ls_tree(repo: Repo, treeish: str, paths: list[str]) -> dict[str, tuple[str, str, str]]:
    out = subprocess.run(
        ["git", "ls-tree", "-z", "--full-tree", treeish, "--", *paths],
        cwd=repo.root, env={**os.environ, "GIT_LITERAL_PATHSPECS": "1"},
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    found = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            found[os.fsdecode(path)] = (mode, kind, oid)
    return found


@pytest.fixture
def odd_repo(repo: Repo) -> tuple[Repo, str]:
    repo.write("pkg/mod.py", "x = 1\n")
    repo.write("pkg/sub/deep.py", "y = 2\n")
    repo.write("pkg.txt", "sorts before pkg/\n")
    repo.write("run.sh", "#!/bin/sh\n", mode=0o755)
    repo.write("with space é.md", "unicode\n")
    (repo.root / "link").symlink_to("pkg/mod.py")
    (repo.root / os.fsdecode(b"raw\xff.bin")).write_bytes(b"not utf-8 name\n")
    repo.commit_all("tree")
    head = repo.git("rev-parse", "HEAD").strip()
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},vendor/sub")
    blob = repo.git("rev-parse", "HEAD:pkg.txt").strip()
    # legacy modes, as old gits wrote them: git reads a file as executable when the
    # owner's execute bit is set, whatever the group's and others' say
    entries = [b"100654 groupx.txt", b"100664 legacy.txt", b"100645 otherx.txt"]
    entries += [b"100744 ownerx.txt"]  # in git's order, by name
    legacy = subprocess.run(
        ["git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin"],
        cwd=repo.root, input=b"".join(e + b"\0" + bytes.fromhex(blob) for e in entries),
        capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},old/legacy.txt")
    tree = repo.git("write-tree").strip()
    # graft the legacy tree in at old/ by hand
    root = repo.git("cat-file", "-p", tree)
    lines = [
        ln if not ln.endswith("\told") else f"040000 tree {legacy}\told" for ln in root.splitlines()
    ]
    grafted = subprocess.run(
        ["git", "mktree"], cwd=repo.root, input="\n".join(lines) + "\n",
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return repo, grafted


PATHS = [
    ["pkg/mod.py"], ["pkg"], ["pkg/sub/deep.py", "pkg.txt", "run.sh"], ["link"],
    ["with space é.md"], [os.fsdecode(b"raw\xff.bin")], ["vendor/sub"], ["vendor/sub/x"],
    ["pkg/mod.py/inside"], ["missing.py", "pkg/missing.py"], ["old/legacy.txt"], ["old"],
    ["old/groupx.txt"], ["old/otherx.txt"], ["old/ownerx.txt"],
]  # fmt: skip


@pytest.mark.parametrize("paths", PATHS, ids=[",".join(p) for p in PATHS])
def test_the_answer_is_ls_trees(odd_repo: tuple[Repo, str], paths: list[str]) -> None:
    repo, tree = odd_repo
    git = discover(repo.root).git
    with git.kept_processes():
        found = tree_entries(git, tree, paths)
    assert found is not None
    expected = _ls_tree(repo, tree, paths)
    assert found == expected
    assert list(found) == list(expected)  # git's order


def test_a_commit_is_read_as_its_tree(committed_repo: Repo) -> None:
    git = discover(committed_repo.root).git
    head = committed_repo.git("rev-parse", "HEAD").strip()
    with git.kept_processes():
        found = tree_entries(git, head, ["calc.py", "README.md"])
    assert found == _ls_tree(committed_repo, head, ["calc.py", "README.md"])


@pytest.mark.parametrize(
    "paths",
    [["*.py"], ["pkg/"], ["./calc.py"], ["a/../calc.py"], ["pkg", "pkg/mod.py"], [":(icase)x"]],
)
def test_what_git_must_answer(committed_repo: Repo, paths: list[str]) -> None:
    git = discover(committed_repo.root).git
    head = committed_repo.git("rev-parse", "HEAD").strip()
    with git.kept_processes():
        assert tree_entries(git, head, paths) is None


def test_none_without_a_kept_reader_or_for_a_missing_object(committed_repo: Repo) -> None:
    git = discover(committed_repo.root).git
    head = committed_repo.git("rev-parse", "HEAD").strip()
    assert tree_entries(git, head, ["calc.py"]) is None  # outside kept_processes
    with git.kept_processes():
        assert tree_entries(git, "0" * 40, ["calc.py"]) is None


CHANGES = [
    {"pkg/mod.py": ("100644", None)},
    {"pkg/new/dir/file.py": ("100755", None)},
    {"pkg/sub/deep.py": None},
    {"pkg.txt": None, "top.py": ("100644", None)},
    {"pkg.txt/inside.py": ("100644", None)},  # a file where a directory is needed
    {"old/legacy.txt": ("100644", None)},  # a tree with a legacy mode in it
]


@pytest.mark.parametrize("changes", CHANGES, ids=[",".join(c) for c in CHANGES])
def test_a_tree_edit_reads_the_same_trees_through_the_kept_reader(
    odd_repo: tuple[Repo, str],
    changes: dict[str, tuple[str, None] | None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tidegate.workspace.tree_edit import edit_tree

    repo, tree = odd_repo
    blob = repo.git("hash-object", "-w", "--stdin", input=b"new content\n").strip()
    edit = {p: (e[0], blob) if e is not None else None for p, e in changes.items()}
    git = discover(repo.root).git
    plain = edit_tree(git, tree, edit)
    calls = record_git_calls(monkeypatch)
    with git.kept_processes():
        kept = edit_tree(git, tree, edit)
    assert kept == plain
    if "pkg.txt/inside.py" in changes:
        assert kept is None  # the kept walk left it to the one-shot batch, which refused
    else:
        assert kept is not None
        assert "cat-file" not in calls  # the trees came through the kept reader


@pytest.mark.parametrize("directory", [b"raw\xff", b"new\nline"])
def test_a_tree_edit_outside_a_run_reads_odd_directory_names(repo: Repo, directory: bytes) -> None:
    """Without a kept reader the trees are read by object id, never by a path on git's
    input: a directory name that is not UTF-8 or holds a newline is read like any other
    (``base:path`` lines on cat-file's input could not carry them: edit_tree gave up)."""
    from tidegate.workspace.tree_edit import edit_tree

    (repo.root / os.fsdecode(directory)).mkdir()
    (repo.root / os.fsdecode(directory + b"/a.txt")).write_bytes(b"a\n")
    repo.write("top.txt", "top\n")
    repo.commit_all("odd directory")
    head = repo.git("rev-parse", "HEAD").strip()
    blob = repo.git("hash-object", "-w", "--stdin", input=b"new content\n").strip()
    # What git's own index way builds: T0 with the one entry replaced.
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.root / ".git" / "scratch-index")}

    def scratch(*args: str, input: bytes | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo.root, env=env, input=input, capture_output=True, check=True
        ).stdout.decode()

    scratch("read-tree", head)
    info = b"100644 " + blob.encode() + b"\t" + directory + b"/a.txt\0"
    scratch("update-index", "-z", "--index-info", input=info)
    expected = scratch("write-tree").strip()

    git = discover(repo.root).git
    assert edit_tree(git, head, {os.fsdecode(directory + b"/a.txt"): ("100644", blob)}) == expected
