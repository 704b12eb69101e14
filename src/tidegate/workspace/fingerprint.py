"""Workspace fingerprints and inventories: has the workspace changed, and exactly how?

``workspace_fingerprint`` answers "is this the same workspace?" cheaply, even on a large
repository. It builds the tree git would snapshot (tracked plus untracked-not-ignored
files) the way T0 does: a copy of ``.git/index`` (``shutil.copy2``, so the mtime that git
judges racily clean entries against is kept) as ``GIT_INDEX_FILE``, ``git add --all``,
``git write-tree``. The copied stat cache means only files changed since the user's last
``git add`` are hashed. The fingerprint combines that tree with HEAD and what is staged
(the tree of the same index copy before the ``add``; with unmerged entries, which have no
tree, a hash of the stage entries). The real index file is never written. Staged
*content* is used rather than the index file's bytes: the user's own ``git status``
rewrites the index's stat data without changing anything staged, and that must not look
like a changed workspace.

``take_inventory``/``diff_inventory`` answer "what did that command change?". An inventory
holds the typed state (``EntryState``) of every path that is not ignored, and for each
generated dependency directory (``node_modules``, ``.venv``, ...) only a bounded metadata
fingerprint -- never a content hash, because such a directory is not evidence a person
can verify byte by byte. File hashes are reused across inventories while a file's
``lstat`` signature is unchanged (the same racy-timestamp rule as git's: a file touched
within the last two seconds is hashed again).

``take_inventory(root, exact=True)`` is the inventory command effects are attested from
when no overlay captured them (``tools/capture.py``): it ignores no path -- ignored files
and nested repositories' ``.git`` directories included, only the root's own ``.git`` (git's
database, read-only under containment) and derived directories (summarised) are left
out -- and records the permission bits of files and directories, so a ``.gitignore``
written by the command hides nothing and a ``chmod`` is a change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path, PurePosixPath

import msgspec

from tidegate.git.settings import IDENTITY
from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.entries import FILE_READ_FLAGS, entry_state
from tidegate.workspace.fingerprint_git import FORMAT as _FORMAT
from tidegate.workspace.fingerprint_git import WorkspaceFingerprint, git_fingerprint
from tidegate.workspace.ignores import (
    ALWAYS_EXCLUDED,
    Discover,
    IgnoreRules,
    ViewChoice,
    chosen_view,
    holding_tracked,
    load_ignores,
)
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState, hash_fd, sha256_bytes

DEFAULT_DERIVED: tuple[str, ...] = (
    "node_modules",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    "dist",
    "build",
)
"""Directory names treated as generated dependency/build state when they hold no tracked
file. Their contents are summarised by a metadata fingerprint, never content hashes."""

DERIVED_MAX_ENTRIES = 20_000
DERIVED_MAX_DEPTH = 24
INVENTORY_MAX_DEPTH = 128
RACY_WINDOW_NS = 2_000_000_000


def workspace_fingerprint(root: Path, view: ViewChoice = Discover.NOW) -> str:
    """``"sha256:<hex>"`` identifying the relevant content of the workspace at ``root``.
    ``view``: the git work tree pinned when the workspace was first seen (see ignores)."""
    return fingerprint_details(root, view).value


def fingerprint_details(root: Path, view: ViewChoice = Discover.NOW) -> WorkspaceFingerprint:
    view = chosen_view(root, view)
    if view is None:
        return _walk_fingerprint(root, None)
    git = view.git
    with tempfile.TemporaryDirectory(prefix="tidegate-fp-") as scratch:
        temp_index = Path(scratch) / "index"
        if view.index_path.exists():
            shutil.copy2(view.index_path, temp_index)  # keeps the mtime: see module doc
        env = {"GIT_INDEX_FILE": str(temp_index), **IDENTITY}
        staged = git.run("write-tree", env=env, check=False)
        if staged.returncode == 0:
            index = "tree:" + staged.text.strip()
        else:  # unmerged entries have no tree: hash the stage entries instead
            listing = git.run("ls-files", "--stage", "-z", "--full-name", ":/", env=env).stdout
            index = "stage:" + sha256_bytes(listing)
        # A path git cannot add (an empty repository a command created below the root)
        # must not make the workspace impossible to fingerprint: it is left out, and what
        # git said about it is part of the fingerprint.
        added = git.run("add", "--all", "--ignore-errors", ":/", env=env, check=False)
        tree = git.out("write-tree", env=env)
        if added.returncode != 0:
            tree += "+unadded:" + sha256_bytes(added.stderr.encode())
    return git_fingerprint(git.rev_parse("HEAD"), tree, index)


def _walk_fingerprint(root: Path, view: ViewChoice) -> WorkspaceFingerprint:
    inventory = take_inventory(root, view=view)
    digest = hashlib.sha256(_FORMAT + b"\0walk\0")
    for path in sorted(inventory.entries):
        state = inventory.entries[path]
        digest.update(
            f"{path}\0{state.kind}\0{state.sha256 or '-'}\n".encode("utf-8", "surrogateescape")
        )
    return WorkspaceFingerprint("sha256:" + digest.hexdigest(), "walk")


# -- inventories ---------------------------------------------------------------------------


class Inventory(msgspec.Struct, frozen=True):
    """Typed states of every non-ignored path, and metadata fingerprints of derived dirs.

    ``derived`` values look like ``"meta-sha256:<hex>"`` (``"...:partial"`` when the
    directory had more than ``DERIVED_MAX_ENTRIES`` entries and only the first ones were
    summarised). ``ignored`` lists what git ignores (directories end in '/');
    ``not_descended`` the directories deeper than ``INVENTORY_MAX_DEPTH``.
    """

    entries: Mapping[str, EntryState]
    derived: Mapping[str, str]
    ignored: tuple[str, ...] = ()
    not_descended: tuple[str, ...] = ()
    root: str = ""
    """Where it was taken (not compared: equal inventories of two roots are equal)."""
    modes: Mapping[str, int] = msgspec.field(default_factory=dict)
    """Permission bits of files and directories (exact inventories only)."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not Inventory:
            return NotImplemented
        mine = (self.entries, self.derived, self.ignored, self.not_descended, self.modes)
        return mine == (
            other.entries,
            other.derived,
            other.ignored,
            other.not_descended,
            other.modes,
        )


class InventoryChange(msgspec.Struct, frozen=True):
    path: str
    before: EntryState
    after: EntryState
    before_mode: int | None = None
    """Permission bits before (files and directories, when the observation records them)."""
    after_mode: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "before": self.before.to_json(), "after": self.after.to_json()}


def take_inventory(
    root: Path,
    *,
    derived_dirs: Sequence[str] = DEFAULT_DERIVED,
    previous: Inventory | None = None,
    derived_max_entries: int = DERIVED_MAX_ENTRIES,
    view: ViewChoice = Discover.NOW,
    exact: bool = False,
) -> Inventory:
    """Observe the workspace at ``root`` now.

    With ``previous``, paths it held that are now ignored are still observed directly, so
    a command that adds a file it changed to ``.gitignore`` cannot hide the change.
    ``view``: the git work tree pinned when the workspace was first seen (None: none).
    ``exact``: ignore rules do not apply, nested ``.git`` directories are walked and
    permission bits recorded (see the module doc).
    """
    view = chosen_view(root, view)
    ignores = IgnoreRules(git=False) if exact else load_ignores(root, view)
    scan = _Scan(ignores, frozenset(derived_dirs), exact)
    derived: dict[str, str] = {}
    started = time.time_ns()
    with RootHandle(root) as handle:
        seen = _Observed(handle, exact, started)
        seen.observe(PurePosixPath("."), scan.skip)
        # A derived-looking directory that holds tracked files is source, not derived.
        tracked = holding_tracked(view, scan.candidates) if view is not None else set()

        def plain(rel: str, is_dir: bool) -> bool:
            if exact:
                return rel == ALWAYS_EXCLUDED
            return rel.rpartition("/")[2] == ALWAYS_EXCLUDED or ignores.ignored(rel, is_dir)

        for rel in scan.candidates:
            if rel in tracked:
                seen.entries[rel] = DIRECTORY
                if exact:
                    seen.modes[rel] = stat.S_IMODE(handle_mode(handle, rel))
                seen.observe(PurePosixPath(rel), plain)
            else:
                derived[rel] = derived_fingerprint(handle, rel, derived_max_entries)
        if previous is not None:
            for rel in previous.entries:
                if rel not in seen.entries and not _under_any(rel, derived):
                    state = handle.state(rel)
                    if state != MISSING:
                        seen.entries[rel] = state
    return Inventory(
        entries=dict(sorted(seen.entries.items())),
        derived=dict(sorted(derived.items())),
        ignored=tuple(ignores.described()),
        not_descended=tuple(seen.not_descended),
        root=str(root),
        modes=dict(sorted(seen.modes.items())),
    )


class _Observed:
    """What an inventory's walks saw: typed states, permission bits (``exact``) and the
    directories too deep to descend."""

    def __init__(self, handle: RootHandle, exact: bool, started: int) -> None:
        self.handle = handle
        self.cache_root = str(handle.real_root)
        self.exact = exact
        self.started = started
        self.entries: dict[str, EntryState] = {}
        self.modes: dict[str, int] = {}
        self.not_descended: list[str] = []

    def observe(self, start: PurePosixPath, skip: Callable[[str, bool], bool]) -> None:
        walk = self.handle.walk(start, max_depth=INVENTORY_MAX_DEPTH, skip=skip)
        with closing(walk):
            for item in walk:
                mode = item.st.st_mode
                if self.exact and (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                    self.modes[item.rel] = stat.S_IMODE(mode)
                if stat.S_ISDIR(mode):
                    self.entries[item.rel] = DIRECTORY
                    if not item.descended:
                        self.not_descended.append(item.rel)
                elif stat.S_ISREG(mode):
                    self.entries[item.rel] = _file_state(
                        self.cache_root, item.rel, item.dir_fd, item.name, item.st, self.started
                    )
                else:
                    self.entries[item.rel] = entry_state(item.dir_fd, item.name)


def handle_mode(handle: RootHandle, rel: str) -> int:
    """``st_mode`` of the directory ``rel`` below the handle's root (not followed)."""
    return os.lstat(handle.real_root / rel).st_mode


def diff_inventory(before: Inventory, after: Inventory) -> tuple[list[InventoryChange], list[str]]:
    """Typed changes in sorted path order, and the derived dirs whose fingerprint changed
    (appeared, disappeared or differs)."""
    changes = []
    for path in sorted(set(before.entries) | set(after.entries)):
        b, a = before.entries.get(path, MISSING), after.entries.get(path, MISSING)
        bm, am = before.modes.get(path), after.modes.get(path)
        if b != a or bm != am:
            changes.append(InventoryChange(path, b, a, bm, am))
    derived = sorted(
        rel
        for rel in set(before.derived) | set(after.derived)
        if before.derived.get(rel) != after.derived.get(rel)
    )
    return changes, derived


class _Scan(msgspec.Struct):
    """The traversal filter of one inventory: ``.git`` and ignored paths are skipped;
    directories with a derived name are set aside as candidates (``take_inventory``
    walks the ones that turn out to hold tracked files as ordinary source)."""

    ignores: IgnoreRules
    derived_names: frozenset[str]
    exact: bool = False
    candidates: list[str] = msgspec.field(default_factory=list)

    def skip(self, rel: str, is_dir: bool) -> bool:
        name = rel.rpartition("/")[2]
        if rel == ALWAYS_EXCLUDED or (name == ALWAYS_EXCLUDED and not self.exact):
            return True
        if is_dir and name in self.derived_names:
            self.candidates.append(rel)
            return True
        return self.ignores.ignored(rel, is_dir)


def _under_any(rel: str, dirs: Mapping[str, str]) -> bool:
    parts = rel.split("/")
    return any("/".join(parts[:i]) in dirs for i in range(1, len(parts) + 1))


# -- content hashes with a stat cache ------------------------------------------------------

_StatKey = tuple[int, int, int, int, int]
_CACHE_LIMIT = 400_000
_cache: dict[tuple[str, str], tuple[_StatKey, EntryState]] = {}
_cache_lock = threading.Lock()


def _file_state(
    cache_root: str, rel: str, dir_fd: int, name: str, seen: os.stat_result, started_ns: int
) -> EntryState:
    """A regular file's state: from the cache when the walk's lstat signature matches a
    remembered one, else hashed (and remembered when it is old enough)."""
    key: _StatKey = (seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns)
    with _cache_lock:
        hit = _cache.get((cache_root, rel))
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        fd = os.open(name, FILE_READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return entry_state(dir_fd, name)  # replaced while we walked: take what is there
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return entry_state(dir_fd, name)
        state = EntryState("file", hash_fd(fd))
    finally:
        os.close(fd)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    # Racily clean: a write in the same timestamp tick as our stat would leave the
    # signature unchanged, so only files older than the window are remembered.
    if max(st.st_mtime_ns, st.st_ctime_ns) < started_ns - RACY_WINDOW_NS:
        with _cache_lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[(cache_root, rel)] = (key, state)
    return state


def derived_fingerprint(handle: RootHandle, rel: str, max_entries: int) -> str:
    """Metadata of a derived directory's entries (path, type, size, mtime, inode, link
    target), bounded by ``max_entries``; never file contents."""
    digest = hashlib.sha256(b"tidegate-derived/1\0")
    count = 0
    partial = False
    try:
        walk = handle.walk(PurePosixPath(rel), max_depth=DERIVED_MAX_DEPTH)
        with closing(walk):
            for item in walk:
                count += 1
                if count > max_entries:
                    partial = True
                    break
                st = item.st
                extra = ""
                if stat.S_ISLNK(st.st_mode):
                    try:
                        extra = os.readlink(item.name, dir_fd=item.dir_fd)
                    except OSError:
                        extra = "?"
                line = (
                    f"{item.rel}\0{stat.S_IFMT(st.st_mode):o}\0{st.st_size}\0"
                    f"{st.st_mtime_ns}\0{st.st_ino}\0{extra}\0{item.descended}\n"
                )
                digest.update(line.encode("utf-8", "surrogateescape"))
    except (FileNotFoundError, NotADirectoryError):
        return "meta-sha256:" + hashlib.sha256(b"vanished").hexdigest()
    return "meta-sha256:" + digest.hexdigest() + (":partial" if partial else "")
