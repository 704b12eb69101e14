"""Conformance 54: file names that look like shell syntax or options stay data - in the
argv the runner spawns, in the validation command the host builds from project.validate's
paths (one argument each, never an option), in tidegate.git's path arguments, and through
a whole guarded run. Nothing they spell is ever executed."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv
from tidegate.git.command import Git

NAMES = [
    "$(touch pwned)",
    "`touch pwned2`",
    "; rm -rf x",
    "&& touch pwned3",
    "| touch pwned4",
    "-rf",
    "--output=x",
    "-",
    "new\nline",
    "q'uo\"te",
    "back\\slash",
    "a b  c",
    "*",
    "ünï ✓",
]
SENTINEL = "x"  # what `rm -rf x` would remove


def _tree(root: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


@pytest.fixture
def weird(repo: Repo) -> Repo:
    repo.write(SENTINEL, "keep me\n")
    for i, name in enumerate(NAMES):
        repo.write(name, f"content {i}\n")
    repo.commit_all()
    return repo


def test_runner_argv_passes_names_as_data(weird: Repo, tmp_path: Path) -> None:
    before = _tree(weird.root)
    for i, name in enumerate(NAMES):
        res = run_command(
            ["ls", "-d", "--", name], weird.root, 10, tmp_path / "spill", clearance=Clearance.user()
        )
        assert (res.exit_code, res.stdout_tail) == (0, f"{name}\n"), name
        # An argument handed to the interpreter after the command string is data too.
        res = run_command(
            [*shell_argv('cat < "$1"'), "sh", name],
            weird.root,
            10,
            tmp_path / "spill",
            clearance=Clearance.user(),
        )
        assert (res.exit_code, res.stdout_tail) == (0, f"content {i}\n"), name
    assert _tree(weird.root) == before


# The operator's validation command, recording what it was handed: each argument, and
# whether it names an existing file (so "./-rf" is the file -rf, not an option).
RECORD_ARGV = (
    f"{sys.executable} -c 'import json, os, sys; "
    "print(json.dumps([[a, os.path.isfile(a)] for a in sys.argv[1:]]))'"
)


@requires_containment
def test_host_built_validation_keeps_each_name_one_non_option_argument(weird: Repo) -> None:
    # tidegate's path policy refuses backslashes; every other name is a valid scope path
    scoped = [n for n in NAMES if "\\" not in n]
    before = _tree(weird.root)
    with executor(weird.root, validation_command=RECORD_ARGV) as ex:
        result = ex.execute(call("project_validate", paths=scoped))
        refused = ex.execute(call("project_validate", paths=["back\\slash"]))
    assert result.ok and result.output is not None, result
    assert result.output["status"] == "passed", result.output["output_tail"]
    argv = json.loads(result.output["output_tail"])
    assert argv == [[f"./{name}", True] for name in scoped]
    assert not any(arg.startswith("-") for arg, _ in argv)
    assert refused.error is not None and refused.error.code == "path_refused"
    assert _tree(weird.root) == before  # no pwned*, no file named after an option
    assert not any(p.startswith("pwned") for p in _tree(weird.root))
    assert weird.read(SENTINEL) == "keep me\n"


def test_git_path_arguments_are_data(weird: Repo) -> None:
    git = Git(weird.root)
    listing = git.run("ls-tree", "-z", "HEAD").stdout.split(b"\0")
    blobs = {}
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        blobs[path.decode()] = meta.split()[2].decode()
    assert set(NAMES) <= set(blobs)
    before = _tree(weird.root)
    contents = git.worktree_contents([(blobs[n], n) for n in NAMES])
    for i, name in enumerate(NAMES):
        want = f"content {i}\n".encode()
        assert git.worktree_bytes(blobs[name], name) == want
        assert contents[(blobs[name], name)] == want
        assert git.hash_worktree_file(weird.root / name, name) == blobs[name]
        ignored = git.run("check-ignore", "-q", "--", name, check=False)
        assert ignored.returncode == 1
    assert _tree(weird.root) == before


def test_a_guarded_run_edits_such_files_and_runs_nothing_they_spell(weird: Repo) -> None:
    # tidegate's path policy refuses backslashes (a separator elsewhere) and an objective
    # line cannot hold a newline; every other name goes through the whole run.
    editable = [n for n in NAMES if "\n" not in n and "\\" not in n]
    objective = "".join(
        f"edit-file: {name}\nreplace: content {NAMES.index(name)}\nwith: edited\n"
        for name in editable
    )
    verify = " && ".join(f"grep -q edited < {shlex.quote(n)}" for n in editable)
    before = _tree(weird.root)
    report = weird.run(objective, verify=verify)
    assert report.status == "succeeded", (report.message, report.feedback)
    assert sorted(c.path for c in report.changed_files) == sorted(editable)
    assert _tree(weird.root) == before  # no pwned*, no files named after options
    assert weird.read(SENTINEL) == "keep me\n"
    for name in editable:
        assert weird.read(name) == "edited\n"
    assert weird.read("new\nline") == f"content {NAMES.index('new' + chr(10) + 'line')}\n"
