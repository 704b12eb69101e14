"""APPLY in the shadow and APPLY_BACK into the main work tree, for every kind of change.

Every test runs a real transaction on a real repository and then checks four things:

* the main work tree holds exactly the expected bytes and executable bits;
* ``.git/index`` is byte-for-byte what it was before the run;
* the shadow (kept for inspection) holds the same bytes and modes as the main tree;
* the report attests the change: ``changed_files`` carries the SHA-256 of the file bytes on
  each side (None for a side that does not exist), ``diff_sha256`` is the SHA-256 of
  ``diff``, and that diff, applied to the T0 tree with real git, reproduces the main tree.

Unified diffs given through ``patch-file:`` are generated with real git in a scratch clone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Repo, git
from tidegate.flow.transaction import execute
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest

LINES = "".join(f"line {i}\n" for i in range(1, 11))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _umask() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise AssertionError("no Umask line in /proc/self/status")


def _read(repo: Repo, path: str) -> bytes | None:
    target = repo.root / path
    return target.read_bytes() if target.is_file() else None


def _mode(root: Path, path: str) -> int:
    return stat.S_IMODE(os.lstat(root / path).st_mode)


def _files(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every regular file under ``root`` (skipping .git and .tidegate): bytes and x bit."""
    out: dict[str, tuple[bytes, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == str(root):
            dirnames[:] = [d for d in dirnames if d not in (".git", ".tidegate")]
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel == ".git":  # a linked worktree's .git file
                continue
            out[rel] = (full.read_bytes(), bool(os.lstat(full).st_mode & 0o100))
    return out


def _scratch_diff(repo: Repo, tmp_path: Path, edit: Callable[[Path], None], *flags: str) -> Path:
    """Clone ``repo``, let ``edit`` change the clone, commit, and return a diff file made by
    ``git diff HEAD~ HEAD`` (plus ``flags``) stored outside the repository."""
    clone = tmp_path / "scratch-clone"
    git(tmp_path, "clone", "-q", str(repo.root), str(clone))
    edit(clone)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "--no-verify", "-m", "scratch change")
    diff = subprocess.run(
        ["git", "diff", *flags, "HEAD~", "HEAD"], cwd=clone, capture_output=True, check=True
    ).stdout
    assert diff, "the scratch edit produced no diff"
    patch = tmp_path / "change.diff"
    patch.write_bytes(diff)
    shutil.rmtree(clone)
    return patch


def _run_kept(repo: Repo, objective: str, base: Path) -> tuple[FlowReport, Path]:
    """Run with the shadow kept; return the report and the shadow's path. Relative
    ``patch-file:`` paths resolve against ``base`` (outside the repository)."""
    request = RunRequest(repo=repo.root, objective=objective, objective_base=base, keep_shadow=True)
    report = execute(request)
    kept = [n for n in report.notes if n.startswith("shadow kept at ")]
    assert len(kept) == 1, report.notes
    return report, Path(kept[0].removeprefix("shadow kept at "))


def _drop_shadow(repo: Repo, shadow: Path) -> None:
    git(repo.root, "worktree", "remove", "--force", "--force", str(shadow))


def _reproduce_from_diff(
    repo: Repo, report: FlowReport, tmp_path: Path
) -> dict[str, tuple[bytes, bool]]:
    """Extract the T0 tree with ``git archive`` and ``git apply`` the report's diff to it."""
    assert report.t0_commit is not None
    target = tmp_path / "from-diff"
    target.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", report.t0_commit],
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    git(target, "init", "-q")
    git(
        target,
        "apply",
        "--whitespace=nowarn",
        "-",
        input=report.diff.encode("utf-8", "surrogateescape"),
    )
    shutil.rmtree(target / ".git")
    return _files(target)


def check_applied(
    repo: Repo,
    tmp_path: Path,
    objective: str,
    expected: dict[str, tuple[bytes | None, bytes | None]],
    modes: dict[str, int] | None = None,
) -> FlowReport:
    """Run ``objective`` and check the main tree, the index, the shadow and the report.

    ``expected`` maps each path the change touches to (bytes at T0, bytes after); None means
    the path does not exist on that side. ``modes`` gives exact permission bits to expect.
    """
    index = repo.index_bytes()
    untouched = {p: v for p, v in _files(repo.root).items() if p not in expected}
    report, shadow = _run_kept(repo, objective, tmp_path)
    try:
        assert report.status == "succeeded", (report.message, report.feedback)
        assert report.exit_code == 0
        phases = {(e.phase, e.status) for e in report.phases}
        assert ("APPLY", "ok") in phases and ("APPLY_BACK", "ok") in phases

        # The main work tree: exact bytes, nothing else touched, the index not written.
        for path, (_, after) in expected.items():
            assert _read(repo, path) == after, path
            if after is None:
                assert not os.path.lexists(repo.root / path), path
        for path, mode in (modes or {}).items():
            assert _mode(repo.root, path) == mode, (path, oct(_mode(repo.root, path)), oct(mode))
        main_files = _files(repo.root)
        assert {p: v for p, v in main_files.items() if p not in expected} == untouched
        assert repo.index_bytes() == index

        # APPLY in the shadow produced the same bytes and executable bits.
        shadow_files = _files(shadow)
        for path, (_, after) in expected.items():
            if after is None:
                assert path not in shadow_files, path
            else:
                assert shadow_files[path] == main_files[path], path
    finally:
        _drop_shadow(repo, shadow)

    # The report attests exactly this change.
    by_path = {c.path: c for c in report.changed_files}
    assert set(by_path) == set(expected)
    for path, (before, after) in expected.items():
        changed = by_path[path]
        action = "create" if before is None else "delete" if after is None else "modify"
        assert changed.action == action, path
        assert changed.before_sha256 == (None if before is None else _sha(before)), path
        assert changed.after_sha256 == (None if after is None else _sha(after)), path
    assert report.diff
    assert report.diff_sha256 == _sha(report.diff.encode("utf-8", "surrogateescape"))
    assert _reproduce_from_diff(repo, report, tmp_path) == main_files
    return report


# --------------------------------------------------------------------------- create / delete


def test_create_files_with_parent_dirs_and_exec_bit(repo: Repo, tmp_path: Path) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    objective = (
        "Add two files.\n\n"
        "create-file: new/deep/hello.txt\n"
        "content: <<<\n"
        "hello\n"
        "  indented, kept verbatim\n"
        "\n"
        "last line\n"
        ">>>\n"
        "create-file: tools/run.sh\n"
        "executable: true\n"
        "content: <<<\n"
        "#!/bin/sh\n"
        "echo ok\n"
        ">>>\n"
    )
    hello = b"hello\n  indented, kept verbatim\n\nlast line\n"
    script = b"#!/bin/sh\necho ok\n"
    umask = _umask()
    report = check_applied(
        repo,
        tmp_path,
        objective,
        {"new/deep/hello.txt": (None, hello), "tools/run.sh": (None, script)},
        modes={"new/deep/hello.txt": 0o666 & ~umask, "tools/run.sh": 0o777 & ~umask},
    )
    by_path = {c.path: c for c in report.changed_files}
    assert by_path["tools/run.sh"].after_mode == "100755"
    assert by_path["new/deep/hello.txt"].after_mode == "100644"
    assert repo.status() == "?? new/deep/hello.txt\n?? tools/run.sh\n"
    applied = {a.path: a for a in report.applied_files}
    assert applied["tools/run.sh"].action == "write"
    assert applied["tools/run.sh"].before_sha256 is None
    assert applied["tools/run.sh"].after_sha256 == _sha(script)


def test_delete_files_and_emptied_directories(repo: Repo, tmp_path: Path) -> None:
    repo.write("f.txt", LINES)
    repo.write("old/only/gone.txt", "bye\n")
    repo.write("keep/gone too.txt", "bye too\n")
    repo.write("keep/stays.txt", "stays\n")
    repo.commit_all()
    report = check_applied(
        repo,
        tmp_path,
        "delete-file: old/only/gone.txt\ndelete-file: keep/gone too.txt\n",
        {"old/only/gone.txt": (b"bye\n", None), "keep/gone too.txt": (b"bye too\n", None)},
    )
    # A directory the deletion empties goes, as with git; a non-empty one stays.
    assert not (repo.root / "old").exists()
    assert (repo.root / "keep/stays.txt").read_bytes() == b"stays\n"
    assert repo.status() == ' D "keep/gone too.txt"\n D old/only/gone.txt\n'
    assert {(a.path, a.action, a.after_sha256) for a in report.applied_files} == {
        ("old/only/gone.txt", "delete", None),
        ("keep/gone too.txt", "delete", None),
    }


# --------------------------------------------------------------------------- rename


def test_rename_structured_keeps_bytes_and_exec_bit(repo: Repo, tmp_path: Path) -> None:
    repo.write("bin/run.sh", "#!/bin/sh\necho run\n", mode=0o755)
    repo.write("docs/a.txt", LINES)
    repo.commit_all()
    script = b"#!/bin/sh\necho run\n"
    objective = (
        "rename-file: bin/run.sh\nto: scripts/start.sh\nrename-file: docs/a.txt\nto: docs/b.txt\n"
    )
    report = check_applied(
        repo,
        tmp_path,
        objective,
        {
            "bin/run.sh": (script, None),
            "scripts/start.sh": (None, script),
            "docs/a.txt": (LINES.encode(), None),
            "docs/b.txt": (None, LINES.encode()),
        },
        modes={"scripts/start.sh": 0o777 & ~_umask()},
    )
    by_path = {c.path: c for c in report.changed_files}
    assert by_path["scripts/start.sh"].after_mode == "100755"
    assert not (repo.root / "bin").exists()


def test_rename_with_edit_from_a_git_diff(repo: Repo, tmp_path: Path) -> None:
    body = "".join(f"row {i}: some content that makes git see a rename\n" for i in range(20))
    repo.write("src/old name.txt", body)
    repo.commit_all()
    new_body = body.replace("row 7:", "row 7 (edited):")

    def edit(clone: Path) -> None:
        (clone / "lib").mkdir()
        git(clone, "mv", "src/old name.txt", "lib/new name.txt")
        (clone / "lib/new name.txt").write_text(new_body)

    patch = _scratch_diff(repo, tmp_path, edit, "-M")
    text = patch.read_text()
    assert "rename from src/old name.txt\nrename to lib/new name.txt\n" in text
    assert "similarity index" in text and "@@" in text
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {
            "src/old name.txt": (body.encode(), None),
            "lib/new name.txt": (None, new_body.encode()),
        },
    )


# --------------------------------------------------------------------------- executable bit


def test_chmod_structured_sets_and_clears_the_exec_bit(repo: Repo, tmp_path: Path) -> None:
    repo.write("run.sh", "#!/bin/sh\necho a\n", mode=0o644)
    repo.write("tool.sh", "#!/bin/sh\necho b\n", mode=0o755)
    repo.commit_all()
    run, tool = b"#!/bin/sh\necho a\n", b"#!/bin/sh\necho b\n"
    # A user-only permission layout must survive: only the x bits change, like chmod +x.
    os.chmod(repo.root / "run.sh", 0o640)
    report = check_applied(
        repo,
        tmp_path,
        "chmod-file: run.sh\nexecutable: true\nchmod-file: tool.sh\nexecutable: false\n",
        {"run.sh": (run, run), "tool.sh": (tool, tool)},
        modes={"run.sh": 0o750, "tool.sh": 0o644},
    )
    by_path = {c.path: c for c in report.changed_files}
    assert (by_path["run.sh"].before_mode, by_path["run.sh"].after_mode) == ("100644", "100755")
    assert (by_path["tool.sh"].before_mode, by_path["tool.sh"].after_mode) == ("100755", "100644")
    assert by_path["run.sh"].before_sha256 == by_path["run.sh"].after_sha256 == _sha(run)
    assert "old mode 100644\nnew mode 100755\n" in report.diff
    assert "old mode 100755\nnew mode 100644\n" in report.diff


def test_mode_change_from_a_git_diff(repo: Repo, tmp_path: Path) -> None:
    repo.write("build.sh", "#!/bin/sh\nmake\n", mode=0o644)
    repo.write("clean.sh", "#!/bin/sh\nrm -rf out\n", mode=0o755)
    repo.commit_all()

    def edit(clone: Path) -> None:
        os.chmod(clone / "build.sh", 0o755)
        os.chmod(clone / "clean.sh", 0o644)
        (clone / "clean.sh").write_text("#!/bin/sh\nrm -rf out dist\n")

    patch = _scratch_diff(repo, tmp_path, edit)
    text = patch.read_text()
    assert "diff --git a/build.sh b/build.sh\nold mode 100644\nnew mode 100755\n" in text
    assert "old mode 100755\nnew mode 100644\n" in text
    umask = _umask()
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {
            "build.sh": (b"#!/bin/sh\nmake\n", b"#!/bin/sh\nmake\n"),
            "clean.sh": (b"#!/bin/sh\nrm -rf out\n", b"#!/bin/sh\nrm -rf out dist\n"),
        },
        modes={"build.sh": 0o777 & ~umask, "clean.sh": 0o666 & ~umask},
    )


# --------------------------------------------------------------------------- binary


def _blob(seed: int, size: int) -> bytes:
    """Deterministic bytes with NULs and every byte value, so git treats them as binary."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    out[:4] = b"\x00\x01\xff\x00"
    return bytes(out[:size])


def test_binary_files_from_a_git_binary_patch(repo: Repo, tmp_path: Path) -> None:
    logo = _blob(1, 3000)
    repo.write("img/logo.bin", logo)
    repo.write("f.txt", LINES)
    repo.commit_all()
    repo.write(".tidegate/config.toml", "[validate]\nallow_binary = true\n")
    new_logo = logo[:1000] + _blob(3, 500) + logo[1500:]
    created = _blob(4, 1200)

    def edit(clone: Path) -> None:
        (clone / "img/logo.bin").write_bytes(new_logo)
        (clone / "img/new.bin").write_bytes(created)

    patch = _scratch_diff(repo, tmp_path, edit, "--binary")
    assert patch.read_text().count("GIT binary patch") == 2
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {"img/logo.bin": (logo, new_logo), "img/new.bin": (None, created)},
    )


def test_deletions_from_a_git_diff(repo: Repo, tmp_path: Path) -> None:
    """A unified diff that deletes files (text, binary, odd name) applies like any other."""
    icon = _blob(2, 700)
    repo.write("img/icon.bin", icon)
    repo.write("old.txt", LINES)
    repo.write("a;b $(x) 'q'.txt", "meta\n")
    repo.write("f.txt", LINES)
    repo.commit_all()

    def edit(clone: Path) -> None:
        for name in ("img/icon.bin", "old.txt", "a;b $(x) 'q'.txt"):
            (clone / name).unlink()

    patch = _scratch_diff(repo, tmp_path, edit, "--binary")
    assert patch.read_text().count("deleted file mode 100644") == 3
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {
            "img/icon.bin": (icon, None),
            "old.txt": (LINES.encode(), None),
            "a;b $(x) 'q'.txt": (b"meta\n", None),
        },
    )


# --------------------------------------------------------------------------- CRLF


CRLF = "".join(f"line {i}\r\n" for i in range(1, 8))


def test_crlf_file_single_line_edit_stays_byte_exact(repo: Repo, tmp_path: Path) -> None:
    repo.write("win.txt", CRLF)
    repo.write("mixed.txt", "unix\nwindows\r\nunix again\n")
    repo.commit_all()
    objective = (
        "edit-file: win.txt\nreplace: line 4\nwith: line four\n"
        "edit-file: mixed.txt\nreplace: windows\nwith: still windows\n"
    )
    check_applied(
        repo,
        tmp_path,
        objective,
        {
            "win.txt": (CRLF.encode(), CRLF.replace("line 4\r", "line four\r").encode()),
            "mixed.txt": (
                b"unix\nwindows\r\nunix again\n",
                b"unix\nstill windows\r\nunix again\n",
            ),
        },
    )


def test_crlf_file_from_a_git_diff_stays_byte_exact(repo: Repo, tmp_path: Path) -> None:
    repo.write("win.txt", CRLF)
    repo.commit_all()
    new = CRLF.replace("line 3\r\n", "line 3\r\ninserted\r\n").replace("line 6", "line six")

    def edit(clone: Path) -> None:
        (clone / "win.txt").write_bytes(new.encode())

    patch = _scratch_diff(repo, tmp_path, edit)
    assert b"+inserted\r\n" in patch.read_bytes()
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {"win.txt": (CRLF.encode(), new.encode())},
    )


def test_crlf_multiline_replace_block_stays_byte_exact(repo: Repo, tmp_path: Path) -> None:
    repo.write("win.txt", CRLF)
    repo.commit_all()
    objective = (
        "edit-file: win.txt\n"
        "replace: <<<\nline 2\r\nline 3\r\n>>>\n"
        "with: <<<\nline 2\r\nline 2.5\r\nline 3\r\n>>>\n"
    )
    new = CRLF.replace("line 3\r\n", "line 2.5\r\nline 3\r\n")
    check_applied(repo, tmp_path, objective, {"win.txt": (CRLF.encode(), new.encode())})


def test_crlf_create_block_stays_byte_exact(repo: Repo, tmp_path: Path) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    objective = "create-file: new.bat\ncontent: <<<\n@echo off\r\necho hi\r\n>>>\n"
    check_applied(repo, tmp_path, objective, {"new.bat": (None, b"@echo off\r\necho hi\r\n")})


# --------------------------------------------------------------------------- odd paths


UNICODE = "dossier/café ü.txt"
SHELLY = "a;b $(x) 'q'.txt"
SPACES = "with spaces/some file.txt"


def test_paths_with_spaces_unicode_and_shell_metacharacters(repo: Repo, tmp_path: Path) -> None:
    repo.write(UNICODE, "bonjour\nau revoir\n")
    repo.write(SPACES, "one\ntwo\n")
    repo.write("plain.txt", "plain\n")
    repo.commit_all()
    objective = (
        f"edit-file: {UNICODE}\nreplace: au revoir\nwith: à bientôt\n"
        f"create-file: {SHELLY}\ncontent: <<<\n$(touch pwned) `id` ; rm -rf x\n>>>\n"
        f"rename-file: {SPACES}\nto: other dir/$HOME & more.txt\n"
    )
    report = check_applied(
        repo,
        tmp_path,
        objective,
        {
            UNICODE: (b"bonjour\nau revoir\n", "bonjour\nà bientôt\n".encode()),
            SHELLY: (None, b"$(touch pwned) `id` ; rm -rf x\n"),
            SPACES: (b"one\ntwo\n", None),
            "other dir/$HOME & more.txt": (None, b"one\ntwo\n"),
        },
    )
    assert not (repo.root / "pwned").exists()
    assert {a.path for a in report.applied_files} == {
        UNICODE,
        SHELLY,
        SPACES,
        "other dir/$HOME & more.txt",
    }


def test_odd_paths_from_a_git_diff(repo: Repo, tmp_path: Path) -> None:
    repo.write(UNICODE, "bonjour\n")
    repo.write(SHELLY, "meta\n")
    repo.commit_all()

    def edit(clone: Path) -> None:
        (clone / UNICODE).write_text("bonjour\nsalut\n")
        (clone / SHELLY).write_text("meta\nmore\n")
        (clone / "ünï cödé/$(y) new.txt").parent.mkdir()
        (clone / "ünï cödé/$(y) new.txt").write_text("new\n")

    patch = _scratch_diff(repo, tmp_path, edit)
    assert '"a/dossier/caf\\303\\251 \\303\\274.txt"' in patch.read_text()  # git quotes it
    check_applied(
        repo,
        tmp_path,
        f"patch-file: {patch.name}\n",
        {
            UNICODE: (b"bonjour\n", b"bonjour\nsalut\n"),
            SHELLY: (b"meta\n", b"meta\nmore\n"),
            "ünï cödé/$(y) new.txt": (None, b"new\n"),
        },
    )


# --------------------------------------------------------------------------- multi-line replace


def test_multiline_replace_blocks(repo: Repo, tmp_path: Path) -> None:
    source = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    repo.write("calc.py", source)
    repo.write("notes.md", "# Notes\n\n>>>\nnot a terminator here\n")
    repo.commit_all()
    objective = (
        "Fix add and document mul.\n\n"
        "edit-file: calc.py\n"
        "replace: <<<\n"
        "def add(a, b):\n"
        "    return a - b\n"
        ">>>\n"
        "with: <<<\n"
        "def add(a, b):\n"
        '    """Sum."""\n'
        "    return a + b\n"
        ">>>\n"
        "replace: <<<\n"
        "def mul(a, b):\n"
        "    return a * b\n"
        ">>>\n"
        "with: <<<\n"
        "def mul(a, b):\n"
        "\n"
        "    return b * a\n"
        ">>>\n"
        "verify-contains: return a + b\n"
        "edit-file: notes.md\n"
        "replace: <<<END\n"
        ">>>\n"
        "not a terminator here\n"
        "END\n"
        "with: <<<END\n"
        ">>> quoted\n"
        "END\n"
    )
    expected = (
        'def add(a, b):\n    """Sum."""\n    return a + b\n\n\ndef mul(a, b):\n\n    return b * a\n'
    )
    check_applied(
        repo,
        tmp_path,
        objective,
        {
            "calc.py": (source.encode(), expected.encode()),
            "notes.md": (b"# Notes\n\n>>>\nnot a terminator here\n", b"# Notes\n\n>>> quoted\n"),
        },
    )


# --------------------------------------------------------------------------- staged + CLI


def test_apply_back_into_a_dirty_tree_keeps_staged_and_untracked(
    repo: Repo, tmp_path: Path
) -> None:
    """A multi-kind change applied over staged, unstaged and untracked user work."""
    repo.write("f.txt", LINES)
    repo.write("g.txt", "g\n")
    repo.write("h.sh", "#!/bin/sh\n")
    repo.commit_all()
    repo.write("g.txt", "g staged\n")
    repo.git("add", "g.txt")
    repo.write("scratch.txt", "untracked user notes\n")
    staged = repo.git("diff", "--cached")
    check_applied(
        repo,
        tmp_path,
        "edit-file: f.txt\nreplace: line 5\nwith: line 5 changed\n"
        "create-file: n.txt\ncontent: n\nchmod-file: h.sh\nexecutable: true\n",
        {
            "f.txt": (LINES.encode(), LINES.replace("line 5", "line 5 changed").encode()),
            "n.txt": (None, b"n"),
            "h.sh": (b"#!/bin/sh\n", b"#!/bin/sh\n"),
        },
    )
    assert repo.git("diff", "--cached") == staged
    assert repo.read("g.txt") == "g staged\n"
    assert repo.read("scratch.txt") == "untracked user notes\n"


def test_patch_file_by_absolute_path(repo: Repo, tmp_path: Path) -> None:
    """``patch-file:`` takes an absolute path too (the planner even expands ``~``)."""
    repo.write("f.txt", LINES)
    repo.commit_all()

    def edit(clone: Path) -> None:
        (clone / "f.txt").write_text(LINES.replace("line 3", "line three"))

    patch = _scratch_diff(repo, tmp_path, edit)
    assert patch.is_absolute()
    check_applied(
        repo,
        tmp_path,
        f"Apply the reviewed diff.\n\npatch-file: {patch}\n",
        {"f.txt": (LINES.encode(), LINES.replace("line 3", "line three").encode())},
    )
