"""Attack: objectives whose bytes or paths are not what the edit blocks expect.

Bytes that are not UTF-8 on stdin, an absolute path, ``docs//x`` and ``./docs/x``, ``..``,
and a path that exists at T0 only through a symlinked directory. Each is refused with one
line naming the problem, or normalised to the path git names; never a traceback, never
"changes nothing at T0" or "no such file at T0" for a file that is right there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli, one_line_error, report_of
from tests.conftest import Repo


@pytest.fixture
def docs_repo(committed_repo: Repo) -> Repo:
    committed_repo.write("docs/x.md", "hello\n")
    committed_repo.write("src/a.py", "x = 1\n")
    os.symlink("src", committed_repo.root / "lnk")
    committed_repo.commit_all("docs, src and a symlink to src")
    committed_repo.write("calc.py", "# dirty\n")
    return committed_repo


def test_stdin_objective_that_is_not_utf8_is_one_line(docs_repo: Repo) -> None:
    before = docs_repo.tree_state()

    res = cli(
        "run",
        "--objective-file",
        "-",
        cwd=docs_repo.root,
        input=b"edit-file: docs/x.md\nreplace: hello \xff\xfe\nwith: bye\n",
    )

    err = one_line_error(res)
    assert "stdin" in err and "UTF-8" in err
    assert docs_repo.tree_state() == before


def test_argv_objective_that_is_not_utf8_is_one_line(docs_repo: Repo) -> None:
    before = docs_repo.tree_state()
    objective = os.fsdecode(b"edit-file: docs/x.md\nreplace: hello \xff\nwith: bye\n")

    res = cli("run", "--objective", objective, cwd=docs_repo.root)

    err = one_line_error(res)
    assert "--objective" in err and "UTF-8" in err
    assert docs_repo.tree_state() == before


@pytest.mark.parametrize(
    "block",
    [
        "edit-file: {root}/docs/x.md\nreplace: hello\nwith: bye\n",
        "create-file: /tmp/evil.txt\ncontent: x\n",
        "rename-file: docs/x.md\nto: {root}/docs/y.md\n",
        "create-file: docs/../../evil.txt\ncontent: x\n",
    ],
    ids=["absolute-edit", "absolute-create", "absolute-rename-target", "dotdot"],
)
def test_unusable_path_is_refused_naming_the_line(docs_repo: Repo, block: str) -> None:
    before = docs_repo.tree_state()
    objective = "Do it.\n\n" + block.format(root=docs_repo.root)

    res = cli("run", "--objective", objective, cwd=docs_repo.root)

    err = one_line_error(res)
    assert "objective:3" in err or "objective:4" in err, err
    assert "absolute" in err or "'..'" in err, err
    assert docs_repo.tree_state() == before


@pytest.mark.parametrize("spelled", ["docs//x.md", "./docs/x.md", "docs/./x.md", "docs/x.md/"])
def test_spelling_of_a_path_is_normalised(docs_repo: Repo, spelled: str) -> None:
    index = docs_repo.index_bytes()
    objective = f"edit-file: {spelled}\nreplace: hello\nwith: bye\n"

    res = cli("run", "--objective", objective, "--json", cwd=docs_repo.root)

    report = report_of(res)
    assert res.returncode == 0, (report["message"], report["feedback"])
    assert [c["path"] for c in report["changed_files"]] == ["docs/x.md"]
    assert docs_repo.read("docs/x.md") == "bye\n"
    assert docs_repo.index_bytes() == index


@pytest.mark.parametrize(
    "block",
    ["edit-file: lnk/a.py\nreplace: x = 1\nwith: x = 2\n", "delete-file: lnk/a.py\n"],
    ids=["edit", "delete"],
)
def test_path_through_a_symlinked_directory_names_the_real_path(
    docs_repo: Repo, block: str
) -> None:
    before = docs_repo.tree_state()

    res = cli("run", "--objective", block, "--json", cwd=docs_repo.root)

    report = report_of(res)
    assert res.returncode == 1
    assert "no such file" not in report["message"], report["message"]
    assert "symlink lnk" in report["message"], report["message"]
    assert "src/a.py" in report["message"], report["message"]
    assert docs_repo.tree_state() == before


@pytest.mark.parametrize("path", ["/tmp/tidegate-evil.md", "docs//new.md", "docs/../new.md"])
def test_model_edit_with_an_unsafe_path_is_refused_by_name(
    docs_repo: Repo, tmp_path: Path, path: str
) -> None:
    """A planner (a script standing in for a model) creating a file at an absolute or
    non-canonical path with an empty SEARCH block: refused naming the path, never "the
    proposal changes nothing at T0"."""
    script = tmp_path / "script.json"
    blocks = f"{path}\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n"
    script.write_text(json.dumps({"attempts": [{"search_replace": blocks}]}))
    before = docs_repo.tree_state()

    res = cli(
        "run",
        "--planner",
        f"scripted:{script}",
        "--objective",
        "x",
        "--max-attempts",
        "1",
        "--json",
        cwd=docs_repo.root,
    )

    report = report_of(res)
    assert res.returncode == 1
    assert report["failure_phase"] == "VALIDATE"
    assert "unsafe path" in report["message"] and path in report["message"], report["message"]
    assert docs_repo.tree_state() == before
    assert not os.path.exists("/tmp/tidegate-evil.md")
