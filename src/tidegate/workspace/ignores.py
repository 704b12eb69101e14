"""What a traversal of the workspace leaves out, and why.

``.git`` is never traversed. When the root is inside a git work tree, what git ignores
(``.gitignore``, ``.git/info/exclude``, the global excludes file) is left out too, taken
from git itself: ``git ls-files --others --ignored --exclude-standard --directory`` lists
the ignored untracked paths, collapsing a wholly ignored directory into one entry, so the
list stays short even when ``node_modules`` holds a hundred thousand files. Tracked files
are never ignored, as in git. Outside a git work tree only ``.git`` is left out.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import msgspec

from tidegate.errors import GitError
from tidegate.git.command import Git

ALWAYS_EXCLUDED = ".git"


class GitView(msgspec.Struct, frozen=True):
    """The git work tree a workspace root lies in. ``prefix`` is the root's path below the
    top of the work tree (``""`` at the top); git prints paths relative to the root."""

    git: Git
    top: Path
    prefix: str
    index_path: Path


def git_view(root: Path, *, filters: bool = True) -> GitView | None:
    """The work tree containing ``root``, or None when ``root`` is not inside one.

    The view's ``git`` is pinned to the git dir and work tree found now (``GIT_DIR``,
    ``GIT_WORK_TREE``): a ``.git`` that a command creates below ``root`` later is never
    discovered through it. Whoever holds a view holds what it trusted on first sight.
    ``filters=False``: the view's git runs no filter driver (a tool workspace, whose
    ``.git`` may be one a command made before this process first looked)."""
    try:
        res = Git(root).run(
            "rev-parse",
            "--is-inside-work-tree",
            "--show-toplevel",
            "--show-prefix",
            "--absolute-git-dir",
            check=False,
        )
    except GitError:
        return None
    lines = res.text.splitlines()
    if res.returncode != 0 or len(lines) < 4 or lines[0] != "true":
        return None
    top, git_dir = Path(lines[1]), Path(lines[3])
    pinned = Git(root, git_dir=git_dir, work_tree=top, filters=filters)
    return GitView(pinned, top, lines[2].rstrip("/"), git_dir / "index")


class Discover(Enum):
    """Passed instead of a view: find the work tree now (trusting what is there now)."""

    NOW = "now"


ViewChoice = GitView | None | Discover
"""A view pinned earlier, None (no git work tree: never look for one), or Discover.NOW."""


def chosen_view(root: Path, view: ViewChoice) -> GitView | None:
    return git_view(root) if isinstance(view, Discover) else view


class IgnoreRules(msgspec.Struct, frozen=True):
    """The ignored paths below a root (root-relative; directories without a slash)."""

    git: bool
    files: frozenset[str] = frozenset()
    dirs: frozenset[str] = frozenset()
    _sorted: tuple[str, ...] = ()
    """``files`` and ``dirs`` as a listing shows them (derived from the two)."""
    _tops: frozenset[str] = frozenset()
    """The first component of every path in ``dirs`` (derived)."""

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """True when git ignores ``rel`` itself or a directory above it."""
        if rel in self.files or (is_dir and rel in self.dirs):
            return True
        top, slash, _ = rel.partition("/")
        if not slash or top not in self._tops:
            return False  # the common case, without building every prefix
        parts = rel.split("/")
        return any("/".join(parts[:i]) in self.dirs for i in range(1, len(parts)))

    def described(self) -> list[str]:
        """The ignored paths as a listing discloses them: directories end in '/'."""
        return list(self._sorted)


def load_ignores(root: Path, view: ViewChoice = Discover.NOW, *, under: str = ".") -> IgnoreRules:
    """The ignore rules for a traversal of ``root`` (restricted to ``under`` when given)."""
    view = chosen_view(root, view)
    if view is None:
        return IgnoreRules(git=False)
    args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
    if under not in ("", "."):
        args += ["--", under]
    out = view.git.run(*args).stdout
    files: set[str] = set()
    dirs: set[str] = set()
    shown: list[str] = []
    for raw in out.split(b"\0"):
        if not raw:
            continue
        path = raw.decode("utf-8", "surrogateescape")
        shown.append(path)
        if path.endswith("/"):
            dirs.add(path.rstrip("/"))
        else:
            files.add(path)
    tops = frozenset(d.split("/", 1)[0] for d in dirs)
    return IgnoreRules(True, frozenset(files), frozenset(dirs), tuple(sorted(shown)), tops)


def holding_tracked(view: GitView, dirs: list[str]) -> set[str]:
    """Those of ``dirs`` (root-relative) that hold at least one tracked path; one git call."""
    if not dirs:
        return set()
    specs = [f":(literal){d}/" for d in dirs]
    out = view.git.run("ls-files", "-z", "--", *specs).stdout
    found: set[str] = set()
    wanted = set(dirs)
    for raw in out.split(b"\0"):
        parts = raw.decode("utf-8", "surrogateescape").split("/")[:-1]
        for i in range(len(parts), 0, -1):
            d = "/".join(parts[:i])
            if d in wanted:
                found.add(d)
    return found
