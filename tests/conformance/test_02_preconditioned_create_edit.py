"""Conformance 2: creates and edits are preconditioned. A create needs 'must_not_exist', a
replace or edit needs the hash last read; a stale precondition changes nothing (same bytes,
same inode) and carries no effect, while a fresh one yields host-observed write effects
with typed before/after states (create = missing before)."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration.tools.support import call, executor, inode_and_bytes, sha
from tidegate.workspace.states import sha256_bytes


def test_create_then_edit_with_preconditions(committed_repo: Repo) -> None:
    root = committed_repo.root
    with executor(root) as ex:
        created = ex.execute(
            call("workspace_write", path="pkg/new.py", content="x = 1\n", expect="must_not_exist")
        )
        assert created.ok and created.output is not None and created.output["created"] is True
        writes = {w.path: w for w in created.effects.write}
        assert writes["pkg"].before.kind == "missing" and writes["pkg"].after.kind == "dir"
        new = writes["pkg/new.py"]
        assert new.before.kind == "missing" and new.before.sha256 is None
        assert new.after.sha256 == sha256_bytes(b"x = 1\n")
        assert created.effects.state_version == 1
        assert created.effects_authority == "host"

        again = ex.execute(
            call("workspace_write", path="pkg/new.py", content="y\n", expect="must_not_exist")
        )
        assert not again.ok and again.error is not None
        assert again.error.code == "stale_precondition"
        assert again.effects.present() == []
        assert (root / "pkg/new.py").read_text() == "x = 1\n"

        before_edit = sha(ex, "calc.py")
        inode, data = inode_and_bytes(root / "calc.py")
        stale = ex.execute(
            call(
                "workspace_edit",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=sha256_bytes(b"something else"),
            )
        )
        assert stale.status == "error" and stale.error is not None
        assert stale.error.code == "stale_precondition"
        assert stale.effects.present() == []
        assert inode_and_bytes(root / "calc.py") == (inode, data)

        edited = ex.execute(
            call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=before_edit)
        )
        assert edited.ok
        (write,) = edited.effects.write
        assert write.path == "calc.py"
        assert write.before.sha256 == before_edit
        assert write.after.sha256 == sha256_bytes((root / "calc.py").read_bytes())
        assert "return a + b" in committed_repo.read("calc.py")
        assert edited.effects.state_version == 2

        replaced = ex.execute(
            call(
                "workspace_write", path="README.md", content="# new\n", expect=sha(ex, "README.md")
            )
        )
        assert replaced.ok and replaced.output is not None
        assert replaced.output["created"] is False
        assert [w.before.kind for w in replaced.effects.write] == ["file"]
