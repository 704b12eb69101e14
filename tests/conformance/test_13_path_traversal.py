"""Conformance 13: symlink and path traversal attempts are refused by every workspace
operation, and nothing outside the root is read, listed, searched or written.

The workspace sits at ``<tmp>/proj`` beside ``<tmp>/proj_evil`` (a sibling whose name
starts with the root's) and ``<tmp>/outside``; each holds a file with a unique marker.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tidegate.workspace.port import (
    MUST_NOT_EXIST,
    PathRefused,
    StalePrecondition,
    WorkspacePort,
)
from tidegate.workspace.states import sha256_bytes

MARKER = "OUTSIDE-MARKER-7f3a"


def tree_digest(base: Path) -> str:
    """Every path, kind, mode and content below ``base`` (links not followed)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(base)):
        dirnames.sort()
        for name in sorted(filenames + dirnames):
            full = Path(dirpath) / name
            st = full.lstat()
            digest.update(f"{full.relative_to(base)}:{st.st_mode:o}".encode())
            if full.is_symlink():
                digest.update(os.readlink(full).encode())
            elif full.is_file():
                digest.update(full.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[WorkspacePort, Path, Path]:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "ok.py").write_text("inside\n")
    for name in ("outside", "proj_evil"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "secret.txt").write_text(f"{MARKER} {name}\n")
        (tmp_path / name / "sub" / "secret.txt").write_text(f"{MARKER} {name} sub\n")
    # Symlinks out of the root, of every shape, at different depths.
    os.symlink(str(tmp_path / "outside"), root / "abs_dir")
    os.symlink("../outside", root / "rel_dir")
    os.symlink("../../outside/secret.txt", root / "src" / "rel_file")
    os.symlink(str(tmp_path / "outside" / "secret.txt"), root / "abs_file")
    os.symlink("../proj_evil", root / "sibling")
    os.symlink("/", root / "fsroot")
    os.symlink(".", root / "src" / "self")  # a loop that stays inside: harmless
    return WorkspacePort(root), root, tmp_path


LEXICAL = [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "/etc/passwd",
    "~/secret.txt",
    "~root/secret.txt",
    "src/ok.py\0.txt",
    "..\\outside\\secret.txt",
    "",
]

SYMLINKED = [
    "abs_dir/secret.txt",
    "abs_dir/sub/secret.txt",
    "rel_dir/secret.txt",
    "src/rel_file",
    "abs_file",
    "sibling/secret.txt",
    "fsroot/etc/passwd",
    "src/self/self/../../abs_dir/secret.txt",
]


def sibling_prefix(base: Path) -> list[str]:
    return [
        str(base / "proj_evil" / "secret.txt"),
        str(base / "proj") + "_evil/secret.txt",
        str(base / "proj" / ".." / "outside" / "secret.txt"),
    ]


def operations(port: WorkspacePort, path: str) -> list[Callable[[], object]]:
    some_hash = sha256_bytes(f"{MARKER} outside\n".encode())
    return [
        lambda: port.read(path),
        lambda: port.state(path),
        lambda: port.write(path, "pwned\n", expect=MUST_NOT_EXIST),
        lambda: port.write(path, "pwned\n", expect=some_hash),
        lambda: port.edit(path, old=MARKER, new="pwned", expect=some_hash),
        lambda: port.delete(path, expect=some_hash),
        lambda: port.list(path),
        lambda: port.grep(MARKER, path=path),
    ]


def test_lexical_escapes_are_refused_everywhere(setup: tuple[WorkspacePort, Path, Path]) -> None:
    port, _, base = setup
    before = tree_digest(base / "outside"), tree_digest(base / "proj_evil")
    for path in [*LEXICAL, *sibling_prefix(base)]:
        for op in operations(port, path):
            with pytest.raises(PathRefused):
                op()
    assert (tree_digest(base / "outside"), tree_digest(base / "proj_evil")) == before


def test_symlink_escapes_are_refused_for_content_and_mutation(
    setup: tuple[WorkspacePort, Path, Path],
) -> None:
    port, root, base = setup
    before = tree_digest(base / "outside"), tree_digest(base / "proj_evil")
    links_before = {p.name: os.readlink(p) for p in root.rglob("*") if p.is_symlink()}
    for path in SYMLINKED:
        for i, op in enumerate(operations(port, path)):
            final_link = path in ("src/rel_file", "abs_file")
            if final_link and i == 1:
                # state() describes the link itself, which is inside: allowed, not followed.
                assert port.state(path).kind == "symlink"
                continue
            if final_link and i == 5:
                # delete() would remove the link itself, never its target; with the
                # target's hash as precondition it is stale and removes nothing.
                with pytest.raises(StalePrecondition):
                    op()
                continue
            with pytest.raises(PathRefused):
                op()
    assert (tree_digest(base / "outside"), tree_digest(base / "proj_evil")) == before
    assert {p.name: os.readlink(p) for p in root.rglob("*") if p.is_symlink()} == links_before


def test_traversals_never_follow_links_out(setup: tuple[WorkspacePort, Path, Path]) -> None:
    port, _, _ = setup
    listing = port.list(depth=12)
    kinds = {e.path: e.kind for e in listing.entries}
    assert kinds["abs_dir"] == "symlink" and kinds["sibling"] == "symlink"
    assert not any("secret" in e.path for e in listing.entries)
    globbed = port.glob("**/*")
    assert not any("secret" in e.path for e in globbed.entries)
    assert port.grep(MARKER).matches == []
    assert port.grep(MARKER, regex=True, case_sensitive=False).matches == []


def test_an_absolute_path_inside_the_root_is_an_ordinary_path(
    setup: tuple[WorkspacePort, Path, Path],
) -> None:
    port, root, _ = setup
    assert port.read(str(root / "src" / "ok.py")).content == "inside\n"
    port.write(str(root / "src" / "new.py"), "n\n", expect=MUST_NOT_EXIST)
    assert (root / "src" / "new.py").read_text() == "n\n"
