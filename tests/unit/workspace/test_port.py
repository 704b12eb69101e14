"""The workspace port on real files and real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.errors import UsageError
from tidegate.workspace.port import (
    MUST_NOT_EXIST,
    BadQuery,
    EditNotApplicable,
    NotADirectory,
    NotAFile,
    NotUtf8,
    PathNotFound,
    PathRefused,
    StalePrecondition,
    TooLarge,
    WorkspaceLimits,
    WorkspacePort,
)
from tidegate.workspace.states import MISSING, EntryState, sha256_bytes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def port(root: Path) -> WorkspacePort:
    return WorkspacePort(root)


def sha(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


# -- read ------------------------------------------------------------------------------------


def test_read_windows_and_whole_file_hash(root: Path, port: WorkspacePort) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 11))
    (root / "f.txt").write_text(text)
    whole = port.read("f.txt")
    assert (whole.content, whole.total_lines, whole.truncated) == (text, 10, False)
    assert whole.sha256 == sha(root / "f.txt") and whole.size == len(text)
    part = port.read("f.txt", start_line=3, max_lines=2)
    assert part.content == "line 3\nline 4\n"
    assert (part.start_line, part.end_line, part.next_start_line) == (3, 4, 5)
    assert part.truncated and part.sha256 == whole.sha256
    tail = port.read("f.txt", start_line=10)
    assert (tail.content, tail.truncated, tail.next_start_line) == ("line 10\n", False, None)
    beyond = port.read("f.txt", start_line=50)
    assert (beyond.content, beyond.end_line, beyond.truncated) == ("", 49, False)


def test_read_edge_shapes(root: Path, port: WorkspacePort) -> None:
    (root / "empty").write_bytes(b"")
    (root / "nonl").write_bytes(b"a\nb")
    (root / "crlf").write_bytes(b"a\r\nb\r\n")
    assert port.read("empty").total_lines == 0
    assert port.read("nonl").total_lines == 2 and port.read("nonl").content == "a\nb"
    assert port.read("crlf").content == "a\r\nb\r\n"


def test_read_is_bounded_by_bytes(root: Path) -> None:
    port = WorkspacePort(root, WorkspaceLimits(max_read_bytes=10))
    (root / "f").write_text("12345\n67890\nabc\n")
    first = port.read("f")
    assert first.content == "12345\n" and first.next_start_line == 2 and first.truncated
    (root / "long").write_text("é" * 20 + "\nnext\n")  # 40 bytes on one line
    cut = port.read("long")
    assert cut.truncated_line == 1 and cut.content == "é" * 5
    assert cut.next_start_line == 2 and cut.sha256 == sha(root / "long")
    # A long line after the first one is left for the next page, never cut.
    (root / "later").write_text("ab\n" + "x" * 30 + "\n")
    later = port.read("later")
    assert later.content == "ab\n" and later.next_start_line == 2


def test_read_refusals(root: Path, port: WorkspacePort) -> None:
    (root / "d").mkdir()
    os.mkfifo(root / "pipe")
    (root / "bin").write_bytes(b"ok\xff\xfe\n")
    with pytest.raises(PathNotFound):
        port.read("nope")
    with pytest.raises(NotAFile):
        port.read("d")
    with pytest.raises(NotAFile):
        port.read("pipe")  # a fifo, opened without blocking
    with pytest.raises(NotUtf8) as caught:
        port.read("bin")
    assert caught.value.sha256 == sha(root / "bin")
    with pytest.raises(BadQuery):
        port.read("d", start_line=0)


def test_read_follows_inside_symlinks_to_the_canonical_path(
    root: Path, port: WorkspacePort
) -> None:
    (root / "real").mkdir()
    (root / "real" / "f").write_text("x\n")
    os.symlink("real", root / "alias")
    os.symlink("real/f", root / "flink")
    assert port.read("alias/f").path == "real/f"
    assert port.read("flink").path == "real/f"
    assert port.read(str(root / "alias" / "f")).content == "x\n"


# -- write -----------------------------------------------------------------------------------


def test_create_then_replace_with_preconditions(root: Path, port: WorkspacePort) -> None:
    created = port.write("pkg/sub/new.py", "A = 1\n", expect=MUST_NOT_EXIST)
    assert created.before == MISSING and created.after == EntryState.file(b"A = 1\n")
    assert created.created_dirs == ("pkg", "pkg/sub") and created.size == 6
    target = root / "pkg" / "sub" / "new.py"
    inode = os.stat(target).st_ino
    with pytest.raises(StalePrecondition) as caught:
        port.write("pkg/sub/new.py", "B\n", expect=MUST_NOT_EXIST)
    assert caught.value.actual == EntryState.file(b"A = 1\n")
    with pytest.raises(StalePrecondition):
        port.write("pkg/sub/new.py", "B\n", expect=sha256_bytes(b"something else"))
    assert target.read_text() == "A = 1\n" and os.stat(target).st_ino == inode

    replaced = port.write("pkg/sub/new.py", "B = 2\n", expect=created.after.sha256 or "")
    assert replaced.before == created.after and replaced.after == EntryState.file(b"B = 2\n")
    assert target.read_text() == "B = 2\n"
    assert not [p for p in target.parent.iterdir() if p.name != "new.py"]  # no temp left


def test_a_stale_replace_of_a_missing_file_says_missing(root: Path, port: WorkspacePort) -> None:
    with pytest.raises(StalePrecondition) as caught:
        port.write("gone/file", "x", expect=sha256_bytes(b"x"))
    assert caught.value.actual == MISSING
    (root / "plain.txt").write_text("p")
    with pytest.raises(NotADirectory):
        port.write("plain.txt/below", "x", expect=MUST_NOT_EXIST)


def test_replace_keeps_permission_bits(root: Path, port: WorkspacePort) -> None:
    script = root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    port.write("run.sh", "#!/bin/sh\necho hi\n", expect=sha(script))
    assert (os.stat(script).st_mode & 0o777) == 0o750


def test_identical_content_touches_nothing(root: Path, port: WorkspacePort) -> None:
    (root / "f").write_text("same\n")
    inode = os.stat(root / "f").st_ino
    mutation = port.write("f", "same\n", expect=sha(root / "f"))
    assert not mutation.changed and os.stat(root / "f").st_ino == inode


def test_hard_links_to_outside_files_are_never_written_through(
    tmp_path: Path, root: Path, port: WorkspacePort
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside original\n")
    os.link(outside, root / "linked.txt")
    assert os.stat(root / "linked.txt").st_nlink == 2
    port.write("linked.txt", "new inside\n", expect=sha(outside))
    assert outside.read_text() == "outside original\n"
    assert (root / "linked.txt").read_text() == "new inside\n"
    assert os.stat(root / "linked.txt").st_ino != os.stat(outside).st_ino
    os.link(outside, root / "linked2.txt")
    port.edit("linked2.txt", old="original", new="edited", expect=sha(outside))
    assert outside.read_text() == "outside original\n"


def test_write_refusals(root: Path, port: WorkspacePort) -> None:
    (root / "real.txt").write_text("t\n")
    os.symlink("real.txt", root / "link")
    with pytest.raises(NotAFile):
        port.write("link", "x", expect=EntryState.symlink(b"real.txt").sha256 or "")
    with pytest.raises(NotUtf8):
        port.write("s.txt", "bad \udcff surrogate", expect=MUST_NOT_EXIST)
    with pytest.raises(PathRefused):
        port.write(".git/config", "x", expect=MUST_NOT_EXIST)
    with pytest.raises(NotAFile):
        port.write(".", "x", expect=MUST_NOT_EXIST)
    with pytest.raises(BadQuery):
        port.write("x", "x", expect="sha256:nothex")
    small = WorkspacePort(root, WorkspaceLimits(max_edit_bytes=4))
    with pytest.raises(TooLarge):
        small.write("big", "12345", expect=MUST_NOT_EXIST)
    assert sorted(p.name for p in root.iterdir()) == ["link", "real.txt"]


def test_a_failed_create_removes_the_directories_it_made(root: Path, port: WorkspacePort) -> None:
    with pytest.raises(NotUtf8):
        port.write("a/b/c.txt", "\udcff", expect=MUST_NOT_EXIST)
    small = WorkspacePort(root, WorkspaceLimits(max_edit_bytes=1))
    with pytest.raises(TooLarge):
        small.write("a/b/c.txt", "too big", expect=MUST_NOT_EXIST)
    assert list(root.iterdir()) == []


# -- edit --------------------------------------------------------------------------------------


def test_edit_outcomes(root: Path, port: WorkspacePort) -> None:
    f = root / "m.py"
    f.write_text("x = 1\ny = 1\n")
    with pytest.raises(EditNotApplicable) as caught:
        port.edit("m.py", old="= 1", new="= 2", expect=sha(f))
    assert caught.value.reason == "ambiguous" and caught.value.count == 2
    with pytest.raises(EditNotApplicable) as caught:
        port.edit("m.py", old="z = 1", new="z = 2", expect=sha(f))
    assert caught.value.reason == "not_found"
    with pytest.raises(EditNotApplicable):
        port.edit("m.py", old="x", new="x", expect=sha(f))
    done = port.edit("m.py", old="= 1", new="= 2", expect=sha(f), replace_all=True)
    assert done.replacements == 2 and f.read_text() == "x = 2\ny = 2\n"
    with pytest.raises(BadQuery):
        port.edit("m.py", old="", new="a", expect=sha(f))
    with pytest.raises(BadQuery):
        port.edit("m.py", old="a", new="b", expect=MUST_NOT_EXIST)


def test_edit_keeps_crlf_and_bom(root: Path, port: WorkspacePort) -> None:
    f = root / "win.txt"
    f.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    port.edit("win.txt", old="one\ntwo", new="uno\ndos", expect=sha(f))
    assert f.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


# -- delete ------------------------------------------------------------------------------------


def test_delete_files_and_symlinks_with_preconditions(
    tmp_path: Path, root: Path, port: WorkspacePort
) -> None:
    (root / "d").mkdir()
    (root / "d" / "f").write_text("f\n")
    outside = tmp_path / "keep"
    outside.write_text("keep\n")
    os.symlink(outside, root / "link")
    with pytest.raises(StalePrecondition):
        port.delete("d/f", expect=sha256_bytes(b"other"))
    gone = port.delete("d/f", expect=sha(root / "d" / "f"))
    assert gone.after == MISSING and (root / "d").is_dir()
    port.delete("link", expect=EntryState.symlink(os.fsencode(outside)).sha256 or "")
    assert outside.read_text() == "keep\n" and not (root / "link").exists()
    with pytest.raises(NotAFile):
        port.delete("d", expect=sha256_bytes(b""))


# -- list, glob, grep --------------------------------------------------------------------------


@pytest.fixture
def tree(repo: Repo) -> Repo:
    repo.write(".gitignore", "build/\n*.log\n")
    repo.write("src/app.py", "def main():\n    return 'Hello'\n")
    repo.write("src/util.py", "HELLO = 1\nhello = 2\n")
    repo.write("src/deep/a/b/c.py", "hello\n")
    repo.write("docs/guide.md", "hello docs\n")
    repo.write("build/out.py", "hello ignored\n")
    repo.write("debug.log", "hello log\n")
    repo.write("README.md", "# readme\n")
    repo.commit_all("tree")
    return repo


def test_list_depth_exclusions_and_ignored(tree: Repo) -> None:
    port = WorkspacePort(tree.root)
    top = port.list()
    assert [e.path for e in top.entries] == [".gitignore", "README.md", "docs", "src"]
    assert ".git/" in top.excluded
    assert "build/ (ignored)" in top.excluded and "debug.log (ignored)" in top.excluded
    assert not top.truncated and top.next_cursor is None
    everything = port.list(depth=12, include_ignored=True)
    paths = [e.path for e in everything.entries]
    assert "build/out.py" in paths and "debug.log" in paths
    assert not any(p.startswith(".git/") or p == ".git" for p in paths)
    assert everything.excluded == [".git/"]
    sized = {e.path: e.size for e in everything.entries}
    assert sized["README.md"] == 9 and sized["src"] is None
    with pytest.raises(PathNotFound):
        port.list("nope")
    with pytest.raises(NotADirectory):
        port.list("README.md")


def test_list_pagination_visits_everything_once(tree: Repo) -> None:
    port = WorkspacePort(tree.root)
    full = [e.path for e in port.list(depth=12).entries]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = port.list(depth=12, limit=3, cursor=cursor)
        seen += [e.path for e in page.entries]
        pages += 1
        if not page.truncated:
            break
        cursor = page.next_cursor
    assert seen == full and pages == -(-len(full) // 3)


def test_cursors_are_bound_to_their_query(tree: Repo) -> None:
    port = WorkspacePort(tree.root)
    cursor = port.list(depth=12, limit=2).next_cursor
    assert cursor is not None
    with pytest.raises(BadQuery):
        port.list(depth=11, limit=2, cursor=cursor)
    with pytest.raises(BadQuery):
        port.list(depth=12, cursor="not-a-cursor")


def test_glob_patterns(tree: Repo) -> None:
    port = WorkspacePort(tree.root)

    def paths(pattern: str, **kw: bool) -> list[str]:
        return [e.path for e in port.glob(pattern, **kw).entries]

    assert paths("**/*.py") == ["src/app.py", "src/deep/a/b/c.py", "src/util.py"]
    assert paths("*.md") == ["README.md"]
    assert paths("src/*.py") == ["src/app.py", "src/util.py"]
    assert paths("src/**") == [
        "src/app.py",
        "src/deep",
        "src/deep/a",
        "src/deep/a/b",
        "src/deep/a/b/c.py",
        "src/util.py",
    ]
    assert paths("**/*.{md,log}") == ["README.md", "docs/guide.md"]
    assert paths("**/*.py", include_ignored=True)[0] == "build/out.py"
    assert paths("src/[a-t]*.py") == ["src/app.py"]
    assert paths("nothere/**") == []
    with pytest.raises(PathRefused):
        port.glob("../**")
    with pytest.raises(PathRefused):
        port.glob("/etc/*")


def test_glob_scan_limit_continues_with_a_cursor(tree: Repo) -> None:
    port = WorkspacePort(tree.root, WorkspaceLimits(max_scan_entries=3))
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        page = port.glob("**/*.py", cursor=cursor)
        seen += [e.path for e in page.entries]
        if not page.truncated:
            break
        assert any("scan stopped" in x for x in page.excluded)
        cursor = page.next_cursor
    assert seen == ["src/app.py", "src/deep/a/b/c.py", "src/util.py"]


def test_grep_literal_regex_case_and_filters(tree: Repo) -> None:
    port = WorkspacePort(tree.root)
    hits = port.grep("hello")
    assert [(m.path, m.line) for m in hits.matches] == [
        ("docs/guide.md", 1),
        ("src/deep/a/b/c.py", 1),
        ("src/util.py", 2),
    ]
    assert "build/ (ignored)" in hits.excluded
    loose = port.grep("hello", case_sensitive=False, glob="*.py")
    assert [(m.path, m.line) for m in loose.matches] == [
        ("src/app.py", 2),
        ("src/deep/a/b/c.py", 1),
        ("src/util.py", 1),
        ("src/util.py", 2),
    ]
    rx = port.grep(r"^\w+ = \d$", regex=True, path="src")
    assert [m.text for m in rx.matches] == ["HELLO = 1", "hello = 2"]
    one = port.grep("Hello", path="src/app.py")
    assert one.files_scanned == 1 and one.matches[0].text == "    return 'Hello'"
    assert port.grep("hello", include_ignored=True, glob="out.py").matches[0].path == "build/out.py"
    with pytest.raises(BadQuery):
        port.grep("(unclosed", regex=True)


def test_grep_pages_through_matches_inside_one_file(root: Path, port: WorkspacePort) -> None:
    (root / "a.txt").write_text("x\nx\ny\nx\n")
    (root / "b.txt").write_text("x\n")
    found: list[tuple[str, int]] = []
    cursor = None
    for _ in range(10):
        page = port.grep("x", limit=2, cursor=cursor)
        found += [(m.path, m.line) for m in page.matches]
        if not page.truncated:
            break
        cursor = page.next_cursor
    assert found == [("a.txt", 1), ("a.txt", 2), ("a.txt", 4), ("b.txt", 1)]


def test_grep_skips_binary_and_large_files_and_says_so(root: Path) -> None:
    port = WorkspacePort(root, WorkspaceLimits(max_file_bytes_scanned=100))
    (root / "blob.bin").write_bytes(b"needle\0\x01")
    (root / "big.txt").write_text("needle\n" * 50)
    (root / "ok.txt").write_text("needle\n")
    result = port.grep("needle")
    assert [m.path for m in result.matches] == ["ok.txt"]
    assert "blob.bin (binary)" in result.excluded
    assert "big.txt (larger than 100 bytes)" in result.excluded


# -- serialisation -------------------------------------------------------------------------------


def test_concurrent_edits_with_one_precondition_commit_once(root: Path) -> None:
    f = root / "counter.txt"
    f.write_text("value 0\n")
    expect = sha(f)
    ports = [WorkspacePort(root) for _ in range(2)]
    outcomes: list[str] = []

    def attempt(i: int) -> None:
        try:
            ports[i % 2].edit("counter.txt", old="value 0", new=f"value {i + 1}", expect=expect)
            outcomes.append("ok")
        except StalePrecondition:
            outcomes.append("stale")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] + ["stale"] * 7


def test_another_process_holding_the_lock_delays_a_write(root: Path, port: WorkspacePort) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from tidegate.workspace.port import WorkspacePort\n"
            "with WorkspacePort(Path(sys.argv[1])).exclusive():\n"
            "    print('held', flush=True)\n"
            "    time.sleep(0.6)\n",
            str(root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        port.write("f", "x", expect=MUST_NOT_EXIST)
        assert time.monotonic() - started > 0.3
    finally:
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_a_swap_between_check_and_commit_is_undone(root: Path, port: WorkspacePort) -> None:
    """Someone replaces the file (a rename, as editors save) after the precondition check:
    the exchange sees a different inode, swaps back, and the call is stale."""
    f = root / "f.txt"
    f.write_text("seen\n")
    expect = sha(f)
    where = port._handle.resolve(port._handle.relative("f.txt"))

    def meddle(_current: bytes) -> bytes:
        (root / "theirs").write_text("theirs\n")
        os.replace(root / "theirs", f)
        return b"mine\n"

    try:
        with pytest.raises(StalePrecondition) as caught:
            port._replace(where, "f.txt", expect, meddle)
    finally:
        where.close()
    assert f.read_text() == "theirs\n"
    assert caught.value.actual == EntryState.file(b"theirs\n")
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]


def test_an_in_place_write_between_check_and_commit_is_undone(
    root: Path, port: WorkspacePort
) -> None:
    f = root / "f.txt"
    f.write_text("seen\n")
    expect = sha(f)
    where = port._handle.resolve(port._handle.relative("f.txt"))

    def meddle(_current: bytes) -> bytes:
        with f.open("r+") as fh:
            fh.write("SEEN\n")
        return b"mine\n"

    try:
        with pytest.raises(StalePrecondition):
            port._replace(where, "f.txt", expect, meddle)
    finally:
        where.close()
    assert f.read_text() == "SEEN\n"


def test_git_internals_are_not_workspace_files(tree: Repo) -> None:
    port = WorkspacePort(tree.root)
    os.symlink(".git/config", tree.root / "cfg")
    os.symlink(".git", tree.root / "gitdir")
    for call in (
        lambda: port.read(".git/config"),
        lambda: port.read("cfg"),
        lambda: port.list(".git"),
        lambda: port.list("gitdir"),
        lambda: port.grep("core", path=".git"),
        lambda: port.grep("core", path="gitdir"),
        lambda: port.glob(".git/*"),
        lambda: port.write(".git/hooks/pre-commit", "x", expect=MUST_NOT_EXIST),
        lambda: port.write("gitdir/hooks/pre-commit", "x", expect=MUST_NOT_EXIST),
        lambda: port.write("gitdir/planted/deep/x", "x", expect=MUST_NOT_EXIST),
    ):
        with pytest.raises(PathRefused) as caught:
            call()
        assert caught.value.reason == "git_dir"
    assert not (tree.root / ".git" / "hooks" / "pre-commit").exists()
    assert not (tree.root / ".git" / "planted").exists()


def test_a_missing_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        WorkspacePort(tmp_path / "nowhere")


def test_yielded_lets_others_in_only_from_the_outermost_hold(tmp_path: Path) -> None:
    """The executor lets the commit lock go while a command runs in its overlay; a hold
    nested deeper (someone else's, further out) keeps it."""
    port = WorkspacePort(tmp_path)
    got: list[str] = []

    def other(label: str) -> None:
        with port.exclusive():
            got.append(label)

    with port.exclusive():
        with port.yielded():
            helper = threading.Thread(target=other, args=("while yielded",))
            helper.start()
            helper.join(timeout=10)
        assert got == ["while yielded"]
        with port.exclusive(), port.yielded():
            helper = threading.Thread(target=other, args=("nested",))
            helper.start()
            helper.join(timeout=0.3)
            assert helper.is_alive() and got == ["while yielded"]  # still held
    helper.join(timeout=10)
    assert got == ["while yielded", "nested"]
