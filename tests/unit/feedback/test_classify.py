"""Classification edge cases, each on the output of a real command: exit codes, signals,
timeouts, lock contention, missing commands and modules, and the order of the rules when
one output holds several kinds of failure."""

from __future__ import annotations

import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from tidegate.errors import ErrorClass
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command, shell_argv
from tidegate.feedback.classify import diagnose, file_reader, signal_name
from tidegate.feedback.diagnostics import Diagnosis

PY = shlex.quote(sys.executable)


def execute(root: Path, command: str, timeout_s: float = 60) -> CommandResult:
    root.mkdir(parents=True, exist_ok=True)
    return run_command(
        shell_argv(command),
        cwd=root,
        timeout_s=timeout_s,
        spill_dir=root.parent / "spill",
        clearance=Clearance.user(),
    )


def run(root: Path, command: str, timeout_s: float = 60) -> Diagnosis:
    result = execute(root, command, timeout_s)
    assert not result.ok
    return diagnose(command, result, root=root)


def test_command_not_found_is_a_dependency(tmp_path: Path) -> None:
    diag = run(tmp_path / "p", "nosuchcommand_tidegate --version")
    assert diag.exit_code == 127
    assert (diag.error_class, diag.rule) == (ErrorClass.DEPENDENCY_ERROR, "dependency")
    assert diag.summary == "missing dependency: command not found: nosuchcommand_tidegate"
    assert not diag.error_class.retryable


def test_command_not_executable_is_a_dependency(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "check.sh").chmod(0o644)
    diag = run(root, "./check.sh")
    assert diag.exit_code == 126
    assert diag.error_class is ErrorClass.DEPENDENCY_ERROR
    assert diag.summary == "missing dependency: command not executable: ./check.sh"


def test_exit_127_without_the_shell_saying_so_is_logic(tmp_path: Path) -> None:
    diag = run(tmp_path / "p", "echo checking; exit 127")
    assert (diag.error_class, diag.rule) == (ErrorClass.LOGIC, "plain")


def test_not_found_text_with_an_ordinary_exit_code_is_logic(tmp_path: Path) -> None:
    """The shell's wording alone does not make a missing command: the exit code must agree."""
    diag = run(tmp_path / "p", "echo 'sh: 1: frobnicate: not found'; exit 1")
    assert diag.error_class is ErrorClass.LOGIC


def test_plain_failure_is_logic_and_keeps_the_output(tmp_path: Path) -> None:
    diag = run(tmp_path / "p", "echo 'expected 3 widgets, found 2' >&2; exit 3")
    assert (diag.error_class, diag.rule) == (ErrorClass.LOGIC, "plain")
    assert diag.summary == "`echo 'expected 3 widgets, found 2' >&2; exit 3` exited 3"
    assert diag.diagnostics == []
    assert "expected 3 widgets, found 2" in diag.feedback
    assert diag.error_class.retryable


def test_timeout_is_logic(tmp_path: Path) -> None:
    diag = run(tmp_path / "p", "echo started; sleep 10", timeout_s=0.5)
    assert diag.timed_out and diag.exit_code is None
    assert (diag.error_class, diag.rule) == (ErrorClass.LOGIC, "timeout")
    assert diag.summary.startswith("`echo started; sleep 10` did not finish within ")
    assert "timed out" in diag.feedback


def test_killed_by_a_signal_is_unknown(tmp_path: Path) -> None:
    # the shell reports its child's death as 128 + 9
    diag = run(tmp_path / "p", f"{PY} -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'")
    assert diag.exit_code == 137
    assert (diag.error_class, diag.rule) == (ErrorClass.UNKNOWN, "signal")
    assert diag.summary.endswith("was killed by SIGKILL")
    # the shell itself killed: a negative code
    diag = run(tmp_path / "q", "kill -SEGV $$")
    assert diag.exit_code == -11
    assert diag.error_class is ErrorClass.UNKNOWN
    assert diag.summary.endswith("was killed by SIGSEGV")


def test_signal_names() -> None:
    assert signal_name(137) == "SIGKILL"
    assert signal_name(-15) == "SIGTERM"
    assert signal_name(1) is None
    assert signal_name(124) is None
    assert signal_name(128) is None
    assert signal_name(None) is None


def test_sqlite_database_locked_is_resource_lock(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    db = root / "app.db"
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN EXCLUSIVE")
        script = (
            "import sqlite3\n"
            "con = sqlite3.connect('app.db', timeout=0)\n"
            "con.execute('INSERT INTO t VALUES (1)')\n"
        )
        (root / "write.py").write_text(script)
        diag = run(root, f"{PY} write.py")
    finally:
        holder.close()
    assert (diag.error_class, diag.rule) == (ErrorClass.RESOURCE_LOCK_ERROR, "lock")
    # the traceback is parsed too, but the lock decides
    assert [d.code for d in diag.diagnostics] == ["sqlite3.OperationalError", "lock"]
    assert diag.summary == "lock contention: sqlite3.OperationalError: database is locked"
    assert not diag.error_class.retryable


def test_git_index_lock_is_resource_lock(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("a\n")
    (root / ".git" / "index.lock").write_text("")
    diag = run(root, "git add a.txt")
    assert diag.error_class is ErrorClass.RESOURCE_LOCK_ERROR
    assert "index.lock': File exists." in diag.summary
    assert str(root) not in diag.summary


def test_lock_contention_beats_the_test_failure_it_causes(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "test_db.py").write_text(
        "import sqlite3\n\n\n"
        "def test_write(tmp_path):\n"
        "    first = sqlite3.connect(tmp_path / 'x.db', isolation_level=None)\n"
        "    first.execute('CREATE TABLE t (x)')\n"
        "    first.execute('BEGIN EXCLUSIVE')\n"
        "    second = sqlite3.connect(tmp_path / 'x.db', timeout=0)\n"
        "    second.execute('INSERT INTO t VALUES (1)')\n"
    )
    diag = run(root, f"{PY} -m pytest -q -p no:cacheprovider -p no:hypothesispytest")
    assert diag.failing_tests == ["test_db.py::test_write"]
    assert diag.error_class is ErrorClass.RESOURCE_LOCK_ERROR


def test_a_syntax_error_beats_test_failures(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "test_ok.py").write_text("def test_fails():\n    assert 1 == 2\n")
    (root / "test_bad.py").write_text("def test_x(:\n    pass\n")
    diag = run(root, f"{PY} -m pytest -q -p no:cacheprovider -p no:hypothesispytest")
    assert diag.error_class is ErrorClass.COMPILATION
    assert [(d.path, d.line) for d in diag.diagnostics] == [("test_bad.py", 1)]


def test_missing_module_is_local_or_a_dependency_by_the_tree(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "main.py").write_text("import app.settings\n")
    command = f"{PY} main.py"
    result = execute(root, command)
    # the top-level package is the project's: the code imports a module that does not exist
    assert diagnose(command, result, root=root).error_class is ErrorClass.COMPILATION
    # without the tree to look at, a missing module is taken for a missing dependency
    assert diagnose(command, result).error_class is ErrorClass.DEPENDENCY_ERROR


def test_without_a_root_paths_stay_as_printed_and_nothing_is_read(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "boom.py").write_text("def f():\n    raise ValueError('x')\n\nf()\n")
    command = f"{PY} {shlex.quote(str(root / 'boom.py'))}"
    result = execute(root, command)
    rooted = diagnose(command, result, root=root)
    assert [(d.path, d.line) for d in rooted.diagnostics] == [("boom.py", 2)]
    assert rooted.files_involved == ["boom.py"]
    assert "> 2 |     raise ValueError('x')" in rooted.feedback
    bare = diagnose(command, result)
    assert [(d.path, d.line) for d in bare.diagnostics] == [(str(root / "boom.py"), 2)]
    assert bare.files_involved == []
    assert " | " not in bare.feedback.split("Output")[0]


def test_file_reader_stays_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("s\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    read = file_reader(root)
    assert read("sub/a.py") == b"x = 1\n"
    assert read("../secret.txt") is None
    assert read(str(tmp_path / "secret.txt")) is None
    assert read("link.txt") is None
    assert read("sub") is None
    assert read("missing.py") is None
    assert file_reader(None)("sub/a.py") is None
