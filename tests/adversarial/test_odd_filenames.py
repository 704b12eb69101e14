"""Attack: file names built to break whoever parses, prints or serialises paths.

Quotes, spaces, a leading dash, newlines, tabs, terminal escapes, rich markup and bytes
that are not UTF-8 go through the whole pipeline: T0 snapshot, candidate tree, VERIFY,
three-way apply-back onto a dirty tree, the ``--json`` report and the terminal report.
Each either works (and is reported losslessly) or is refused before anything is written;
never a traceback after the change is already applied.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._repo_shapes import cli, diff_made_by_git, report_of
from tests.conftest import Repo

LINES = b"".join(b"line %d\n" % i for i in range(1, 13))

# name -> how the terminal report must show it (git-style quoting where a name needs it)
NAMES: dict[bytes, str] = {
    b'q"uote.txt': '"q\\"uote.txt"',
    b"sp ace.txt": "sp ace.txt",
    b"-dash.txt": "-dash.txt",
    b"new\nline.txt": '"new\\nline.txt"',
    b"ta\tb.txt": '"ta\\tb.txt"',
    b"\x1b[2Jesc.txt": '"\\033[2Jesc.txt"',
    b"[bold]markup.txt": "[bold]markup.txt",
    b"bad\xff\xfe.txt": '"bad\\377\\376.txt"',
    "caf\u00e9.txt".encode(): "caf\u00e9.txt",
    b"cr\rx.txt": '"cr\\rx.txt"',
    "rtl\u202egnp.txt".encode(): '"rtl\\342\\200\\256gnp.txt"',
    b"--help": "--help",
    b"trailing ": "trailing ",
    b'"quoted".txt': '"\\"quoted\\".txt"',
    b'"': '"\\""',
    b"-": "-",
    b" lead space.txt": " lead space.txt",
    "\u65e5\u672c\u8a9e.txt".encode(): "\u65e5\u672c\u8a9e.txt",
}
IDS = [
    "quote",
    "space",
    "dash",
    "newline",
    "tab",
    "escape",
    "markup",
    "not-utf8",
    "utf8",
    "carriage-return",
    "rtl-override",
    "double-dash",
    "trailing-space",
    "leading-quote",
    "only-quote",
    "only-dash",
    "leading-space",
    "cjk",
]


def _raw(entry: dict[str, Any]) -> bytes:
    """The exact bytes of a reported path: ``path_bytes`` (base64) when it is set."""
    if entry.get("path_bytes"):
        return base64.b64decode(entry["path_bytes"])
    path = entry["path"]
    assert isinstance(path, str)
    return path.encode("utf-8")  # strict: a path without path_bytes is exactly this text


def _odd_repo(repo: Repo, name: bytes) -> Path:
    """``name`` committed with 12 lines, then a dirty tree: the user edited line 1 of it,
    staged an edit of calc.py and left an untracked file with the same odd name + .mine."""
    root = repo.root
    (root / os.fsdecode(name)).write_bytes(LINES)
    repo.write("calc.py", "x = 1\n")
    repo.commit_all("odd names")
    (root / os.fsdecode(name)).write_bytes(LINES.replace(b"line 1\n", b"line 1 (mine)\n"))
    repo.write("calc.py", "x = 2\n")
    repo.git("add", "calc.py")
    (root / os.fsdecode(name + b".mine")).write_bytes(b"untracked\n")
    return root


def _change(tmp_path: Path, repo: Repo, name: bytes) -> Path:
    """A git-written diff editing line 11 of ``name`` and creating ``name + .new``."""

    def mutate(clone: Path) -> None:
        (clone / os.fsdecode(name)).write_bytes(LINES.replace(b"line 11\n", b"line 11 (ai)\n"))
        (clone / os.fsdecode(name + b".new")).write_bytes(b"created\n")

    diff = tmp_path / "change.diff"
    diff.write_bytes(diff_made_by_git(repo, tmp_path, mutate))
    return diff


@pytest.mark.parametrize("name", list(NAMES), ids=IDS)
def test_odd_name_goes_through_the_whole_pipeline(
    committed_repo: Repo, tmp_path: Path, name: bytes
) -> None:
    repo = committed_repo
    root = _odd_repo(repo, name)
    diff = _change(tmp_path, repo, name)
    index = repo.index_bytes()
    mine = (root / os.fsdecode(name + b".mine")).read_bytes()

    res = cli("run", "--objective", f"patch-file: {diff}", "--verify", "true", "--json", cwd=root)

    report = report_of(res)
    assert res.returncode == 0, (report["message"], report["feedback"])
    assert {_raw(c) for c in report["changed_files"]} == {name, name + b".new"}
    assert {_raw(a) for a in report["applied_files"]} == {name, name + b".new"}
    merged = LINES.replace(b"line 1\n", b"line 1 (mine)\n").replace(b"line 11\n", b"line 11 (ai)\n")
    assert (root / os.fsdecode(name)).read_bytes() == merged
    assert (root / os.fsdecode(name + b".new")).read_bytes() == b"created\n"
    assert (root / os.fsdecode(name + b".mine")).read_bytes() == mine
    assert repo.index_bytes() == index


@pytest.mark.parametrize("name", list(NAMES), ids=IDS)
def test_odd_name_in_a_diff_git_refuses_is_applied_tolerantly(
    committed_repo: Repo, tmp_path: Path, name: bytes
) -> None:
    """A diff as a model copies it, trailing whitespace added to a context line: git
    refuses it, and the tolerant hunks must read git's quoted names in its headers."""
    repo = committed_repo
    root = _odd_repo(repo, name)
    diff = _change(tmp_path, repo, name)
    sloppy = diff.read_bytes().replace(b"\n line 10\n", b"\n line 10  \n", 1)
    assert sloppy != diff.read_bytes()
    diff.write_bytes(sloppy)
    index = repo.index_bytes()

    res = cli("run", "--objective", f"patch-file: {diff}", "--verify", "true", "--json", cwd=root)

    report = report_of(res)
    assert res.returncode == 0, (report["message"], report["feedback"])
    assert any("trailing whitespace ignored" in note for note in report["notes"])
    assert {_raw(a) for a in report["applied_files"]} == {name, name + b".new"}
    merged = LINES.replace(b"line 1\n", b"line 1 (mine)\n").replace(b"line 11\n", b"line 11 (ai)\n")
    assert (root / os.fsdecode(name)).read_bytes() == merged
    assert (root / os.fsdecode(name + b".new")).read_bytes() == b"created\n"
    assert repo.index_bytes() == index


@pytest.mark.parametrize("name", list(NAMES), ids=IDS)
def test_odd_name_as_a_directory_goes_through_the_whole_pipeline(
    committed_repo: Repo, tmp_path: Path, name: bytes
) -> None:
    """The odd name as a directory on the changed paths' way to the root: the candidate's
    trees are read and rewritten along it, and APPLY hashes the files beneath it."""
    repo = committed_repo
    inner, created = name + b"/inner.txt", name + b"/sub/" + name
    (repo.root / os.fsdecode(name)).mkdir()
    (repo.root / os.fsdecode(inner)).write_bytes(LINES)
    repo.commit_all("odd directory")
    (repo.root / os.fsdecode(inner)).write_bytes(LINES.replace(b"line 1\n", b"line 1 (mine)\n"))
    before = repo.tree_state()

    def mutate(clone: Path) -> None:
        (clone / os.fsdecode(inner)).write_bytes(LINES.replace(b"line 11\n", b"line 11 (ai)\n"))
        (clone / os.fsdecode(name + b"/sub")).mkdir()
        (clone / os.fsdecode(created)).write_bytes(b"created\n")

    diff = tmp_path / "change.diff"
    diff.write_bytes(diff_made_by_git(repo, tmp_path, mutate))

    res = cli(
        "run", "--objective", f"patch-file: {diff}", "--verify", "true", "--json", cwd=repo.root
    )

    report = report_of(res)
    assert res.returncode == 0, (report["message"], report["feedback"])
    assert {_raw(a) for a in report["applied_files"]} == {inner, created}
    merged = LINES.replace(b"line 1\n", b"line 1 (mine)\n").replace(b"line 11\n", b"line 11 (ai)\n")
    assert (repo.root / os.fsdecode(inner)).read_bytes() == merged
    assert (repo.root / os.fsdecode(created)).read_bytes() == b"created\n"
    assert repo.index_bytes() == before["<index>"]


@pytest.mark.parametrize("name", list(NAMES), ids=IDS)
def test_odd_name_is_shown_quoted_on_the_terminal(
    committed_repo: Repo, tmp_path: Path, name: bytes
) -> None:
    repo = committed_repo
    root = _odd_repo(repo, name)
    diff = _change(tmp_path, repo, name)

    res = cli("run", "--objective", f"patch-file: {diff}", cwd=root)

    assert res.returncode == 0, res.stdout + res.stderr
    assert b"Traceback" not in res.stderr
    out = res.stdout.decode("utf-8")  # strict
    controls = {ch for ch in out if (ord(ch) < 0x20 and ch != "\n") or ord(ch) == 0x7F}
    assert not controls, f"raw control characters reach the terminal: {controls}"
    shown = NAMES[name]
    rows = [line for line in out.splitlines() if line.startswith(("modify ", "create "))]
    assert len(rows) == 2, out  # one table row per changed path, however odd its name
    assert any(shown in row for row in rows), out


def test_backslash_name_is_refused_before_any_write(committed_repo: Repo, tmp_path: Path) -> None:
    repo = committed_repo
    repo.write("calc.py", "dirty\n")
    diff = tmp_path / "change.diff"
    diff.write_bytes(
        diff_made_by_git(repo, tmp_path, lambda c: (c / "back\\slash.txt").write_bytes(b"x\n"))
    )
    before = repo.tree_state()

    res = cli("run", "--objective", f"patch-file: {diff}", "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 1
    assert report["failure_phase"] == "PATCH" or report["failure_phase"] == "VALIDATE"
    assert "back" in " ".join(report["feedback"])
    assert repo.tree_state() == before


@pytest.mark.parametrize("name", [b"new\nline.txt", b"bad\xff\xfe.txt"], ids=["newline", "bytes"])
def test_odd_name_conflict_exits_3_with_a_valid_report(
    committed_repo: Repo, tmp_path: Path, name: bytes
) -> None:
    """The user's edit lands on the odd-named file while VERIFY runs (uncontained, by
    absolute path): exit 3, a strict-JSON report naming the path, its .rej on disk."""
    repo = committed_repo
    root = _odd_repo(repo, name)
    diff = _change(tmp_path, repo, name)
    editor = tmp_path / "edit.py"
    target = os.fsencode(root) + b"/" + name
    editor.write_text(f"open({target!r}, 'wb').write(b'overwritten by you\\n')\n")
    index = repo.index_bytes()

    res = cli(
        "run",
        "--objective",
        f"patch-file: {diff}",
        "--verify",
        f"{sys.executable} {editor}",
        "--containment",
        "none",
        "--json",
        cwd=root,
    )

    report = report_of(res)
    assert res.returncode == 3, report["message"]
    assert report["status"] == "conflict"
    assert report["applied_files"] == []
    assert (root / os.fsdecode(name)).read_bytes() == b"overwritten by you\n"
    assert not (root / os.fsdecode(name + b".new")).exists()
    rejects = [p for p in (root / ".tidegate" / "rejects").rglob("*") if p.is_file()]
    assert {os.fsencode(p.name) for p in rejects} >= {name + b".rej"}
    assert len(report["rejects"]) == len(rejects)
    assert repo.index_bytes() == index


def test_content_that_is_not_utf8_is_reported_without_a_traceback(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """A Latin-1 file (text to git, not UTF-8) edited: the run succeeds, the report is
    strict JSON, and ``diff_sha256`` is over the diff's exact bytes."""
    repo = committed_repo
    repo.write("latin.txt", b"caf\xe9\nline 2\n")
    repo.commit_all("latin-1")
    repo.write("calc.py", "# dirty\n")
    diff = tmp_path / "latin.diff"
    diff.write_bytes(
        diff_made_by_git(
            repo, tmp_path, lambda c: (c / "latin.txt").write_bytes(b"caf\xe9\nligne 2 \xe0\n")
        )
    )
    index = repo.index_bytes()

    res = cli("run", "--objective", f"patch-file: {diff}", "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 0, report["message"]
    assert (repo.root / "latin.txt").read_bytes() == b"caf\xe9\nligne 2 \xe0\n"
    assert "\\xe0" in report["diff"]
    exact = subprocess.run(
        ["git", "diff", "--binary", "--no-renames", "--full-index", report["t0_commit"]],
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout
    assert hashlib.sha256(exact).hexdigest() == report["diff_sha256"]
    assert repo.index_bytes() == index


def test_a_deleted_name_with_a_newline_cannot_excuse_a_nested_write(
    repo: Repo, tmp_path: Path
) -> None:
    """``git apply --summary`` writes ``n\\nl`` on two lines: read line by line, its first
    piece said the diff deletes ``n``, which excused writing both ``n`` and ``n/x``; the
    run then failed in APPLY after building a candidate that held only one of them."""
    repo.write("n\nl", "x\n")
    repo.write("k", "k\n")
    repo.commit_all()
    before = repo.tree_state(with_mtimes=True)
    diff = tmp_path / "nested.diff"
    diff.write_text(
        'diff --git "a/n\\nl" "b/n\\nl"\ndeleted file mode 100644\n--- "a/n\\nl"\n'
        "+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+file\n"
        "diff --git a/n/x b/n/x\nnew file mode 100644\n--- /dev/null\n+++ b/n/x\n"
        "@@ -0,0 +1 @@\n+inner\n"
    )

    res = cli(
        "run", "--objective", f"patch-file: {diff}", "--max-attempts", "1", "--json", cwd=repo.root
    )

    report = report_of(res)
    assert res.returncode == 1
    assert (report["failure_phase"], report["error_class"]) == ("VALIDATE", "AST_VALIDATION_ERROR")
    assert "n: the proposal writes it and also n/x beneath it" in report["message"]
    assert repo.tree_state(with_mtimes=True) == before
