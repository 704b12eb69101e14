"""Workspace tools over a real repository: inspection evidence, parent directories,
symlinked directories, refusals, and the port's limits surfacing as structured results."""

from __future__ import annotations

import os

from tests.conftest import Repo
from tests.integration.tools.support import call, executor, sha
from tidegate.workspace.states import sha256_bytes


def test_inspection_tools_claim_what_they_inspected(committed_repo: Repo) -> None:
    committed_repo.write("src/pkg/mod.py", "def add():\n    return 1\n")
    committed_repo.write("build/out.txt", "ignored\n")
    with executor(committed_repo.root) as ex:
        listed = ex.execute(call("workspace_list", path=".", depth=3))
        globbed = ex.execute(call("workspace_glob", pattern="**/*.py"))
        grepped = ex.execute(call("workspace_grep", pattern="def add"))
        ranged = ex.execute(call("workspace_read", path="calc.py", start_line=2, max_lines=1))
    assert listed.ok and listed.output is not None
    paths = [e["path"] for e in listed.output["entries"]]
    assert "src/pkg/mod.py" in paths and "build/out.txt" not in paths
    assert any(".git" in x for x in listed.output["excluded"])
    assert listed.effects.inspect[0].kind == "directory"
    assert set(listed.effects.inspect[0].paths) == set(paths)
    assert globbed.effects.inspect[0].paths == ("calc.py", "src/pkg/mod.py")
    assert grepped.effects.inspect[0].paths == ("calc.py", "src/pkg/mod.py")
    assert ranged.output is not None and ranged.output["content"] == "    return a - b\n"
    inspected = ranged.effects.inspect[0]
    assert (inspected.start_line, inspected.end_line) == (2, 2)
    assert inspected.sha256 == ranged.output["sha256"]
    for result in (listed, globbed, grepped, ranged):
        assert result.effects.write == () and result.effects.state_version is None


def test_write_through_a_symlinked_directory_reports_the_canonical_path(
    committed_repo: Repo,
) -> None:
    os.mkdir(committed_repo.root / "real")
    os.symlink("real", committed_repo.root / "alias")
    with executor(committed_repo.root) as ex:
        result = ex.execute(
            call("workspace_write", path="alias/x.txt", content="x\n", expect="must_not_exist")
        )
    assert result.ok
    assert [w.path for w in result.effects.write] == ["real/x.txt"]
    assert (committed_repo.root / "real/x.txt").read_text() == "x\n"


def test_refusals_are_structured_and_change_nothing(committed_repo: Repo, tmp_path: object) -> None:
    os.symlink("/etc", committed_repo.root / "escape")
    before = committed_repo.tree_state()
    with executor(committed_repo.root) as ex:
        codes = {
            name: ex.execute(c).error.code  # type: ignore[union-attr]
            for name, c in {
                "dotdot": call("workspace_write", path="../x", content="", expect="must_not_exist"),
                "absolute": call("workspace_read", path="/etc/passwd"),
                "symlink": call("workspace_read", path="escape/passwd"),
                "symlink-write": call(
                    "workspace_write", path="escape/x", content="", expect="must_not_exist"
                ),
                "dir": call("workspace_read", path="."),
                "missing": call(
                    "workspace_edit", path="nope.py", old="a", new="b", expect="sha256:" + "0" * 64
                ),
            }.items()
        }
    assert codes["dotdot"] == codes["absolute"] == codes["symlink"] == "path_refused"
    # the write policy allows a plain relative path; confinement then refuses the escape
    assert codes["symlink-write"] == "path_refused"
    assert codes["dir"] == "not_a_file"
    assert codes["missing"] == "stale_precondition"
    assert committed_repo.tree_state() == before


def test_invalid_utf8_is_refused_without_rewriting(committed_repo: Repo) -> None:
    committed_repo.write("bin.dat", b"\xff\xfe\x00abc")
    with executor(committed_repo.root) as ex:
        read = ex.execute(call("workspace_read", path="bin.dat"))
        edit = ex.execute(
            call(
                "workspace_edit",
                path="bin.dat",
                old="abc",
                new="x",
                expect=sha256_bytes(b"\xff\xfe\x00abc"),
            )
        )
    assert read.error is not None and read.error.code == "not_utf8"
    assert edit.error is not None and edit.error.code == "not_utf8"
    assert (committed_repo.root / "bin.dat").read_bytes() == b"\xff\xfe\x00abc"


def test_identical_rewrite_is_ok_without_a_write_effect(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        same = ex.execute(
            call(
                "workspace_write", path="README.md", content="# calc\n", expect=sha(ex, "README.md")
            )
        )
    assert same.ok and same.effects.write == () and same.effects.state_version is None
