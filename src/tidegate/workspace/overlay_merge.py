"""An overlay's upper layer as a change set: what a command changed, and merging it back.

``plan_merge`` reads the upper layer of a command's overlay (``exec/overlay/``) top
down. Its entries are exactly the paths the command touched: a whiteout (a 0:0 character
device) is a deletion, an opaque directory one that replaced whatever was there, any
other directory a copied-up parent or a new or re-moded one, and every other entry a
created, modified, re-moded or replaced file, symlink or special file. For each, the
before state comes from the real workspace (still untouched: the command could not write
it), the after state from the upper layer; a deleted or replaced directory contributes
every entry below it. States are typed and hashed as everywhere (``EntryState``) and
carry the permission bits of files and directories, so the changes are the same as a
diff of two exact inventories (``take_inventory(exact=True)``) around the merge would
give -- the cost is O(what changed), not O(repository).

``apply_merge`` then makes the real workspace what the command saw: deletions and
replacements first, directories created or re-moded, entries renamed out of the upper
layer (copied when it is on another file system). A file the command wrote in place
(copied up: it carries the overlay's ``origin`` mark) whose real inode has other hard
links is written in place, so the other names change as they would have without the
overlay; since those names cannot be found without a walk, such a plan asks for the
full-inventory fallback (``fallback``) instead of attesting its own changes.

An upper layer with marks this reader does not interpret (``redirect``, ``metacopy``)
raises ``UpperUnreadable`` before anything is written.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from tidegate.workspace.states import DIRECTORY, MISSING, EntryState, hash_fd

OpKind = Literal["delete", "dir", "put"]
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_UNREAD_MARKS = ("redirect", "metacopy")


class UpperUnreadable(Exception):
    """The upper layer holds something this merge cannot interpret; nothing was written."""


class Op(msgspec.Struct, frozen=True):
    rel: str
    kind: OpKind
    replace: bool = False
    """For ``dir``: remove what is at the real path first (opaque or a type change)."""


class Change(msgspec.Struct):
    """One path's before and after (state, permission bits)."""

    before: EntryState
    before_mode: int | None
    after: EntryState = MISSING
    after_mode: int | None = None


class MergePlan(msgspec.Struct):
    ops: list[Op]
    changes: dict[str, Change]
    """Every path whose state or mode changed, root-relative, in walk order."""
    derived: set[str] = msgspec.field(default_factory=set)
    """Derived directories (``node_modules`` ...) something below changed: summarised by
    their metadata fingerprint, as inventories do, never listed path by path."""
    fallback: str | None = None
    """Why these changes cannot be attested from the upper layer alone (hard links)."""
    in_place: set[str] = msgspec.field(default_factory=set)
    """Files to write into the real inode rather than replace (see the module doc)."""


IsDerived = Callable[[str], bool]
"""Whether the directory at this root-relative path, which has a derived name, is
summarised (it holds no tracked file)."""


def plan_merge(
    root: Path, upper: Path, xattr_prefix: str, names: frozenset[str], is_derived: IsDerived
) -> MergePlan:
    """Read ``upper`` as the change set over ``root`` (both real paths); writes nothing.
    ``names``: directory names that may be derived; ``is_derived`` decides for one."""
    plan = MergePlan([], {})
    _Reader(root, upper, xattr_prefix, names, is_derived, plan).visit("", None)
    plan.changes = {
        rel: c
        for rel, c in plan.changes.items()
        if c.before != c.after or c.before_mode != c.after_mode
    }
    return plan


class _Reader(msgspec.Struct):
    root: Path
    upper: Path
    prefix: str
    names: frozenset[str]
    is_derived: IsDerived
    plan: MergePlan

    def visit(self, rel_dir: str, inside: str | None) -> None:
        """``inside``: the derived directory this one lies in (ops only, no changes)."""
        plan = self.plan
        with os.scandir(self.upper / rel_dir if rel_dir else self.upper) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            st = entry.stat(follow_symlinks=False)
            real = real_lstat(self.root, rel)
            is_dir = stat.S_ISDIR(st.st_mode)
            marks = _marks(entry.path, self.prefix) if is_dir or stat.S_ISREG(st.st_mode) else {}
            if any(m in marks for m in _UNREAD_MARKS):
                raise UpperUnreadable(f"{rel}: overlay marks {sorted(marks)} are not read")
            summarised = inside
            if inside is None and self._derived(rel, real, is_dir and not _is_whiteout(st)):
                plan.derived.add(rel)
                summarised = rel
            if _is_whiteout(st):
                plan.ops.append(Op(rel, "delete"))
                self._removed(rel, real, summarised)
                continue
            if is_dir:
                opaque = marks.get("opaque")
                if opaque not in (None, b"y"):
                    raise UpperUnreadable(f"{rel}: unknown opaque mark {opaque!r}")
                replace = real is not None and (opaque == b"y" or not stat.S_ISDIR(real.st_mode))
                if replace:
                    self._removed(rel, real, summarised)
                if summarised is None:
                    change = self._change(rel, real)
                    change.after, change.after_mode = DIRECTORY, stat.S_IMODE(st.st_mode)
                plan.ops.append(Op(rel, "dir", replace))
                self.visit(rel, summarised)
                continue
            if real is not None and stat.S_ISDIR(real.st_mode):
                self._removed(rel, real, summarised)
            if real is not None and stat.S_ISREG(real.st_mode) and real.st_nlink > 1:
                plan.fallback = f"{rel} has {real.st_nlink} hard links"
                if "origin" in marks:
                    plan.in_place.add(rel)
            if summarised is None or summarised == rel:
                change = self._change(rel, real if summarised is None else None)
                change.after, change.after_mode = _state_of(entry.path, st)
            plan.ops.append(Op(rel, "put"))

    def _derived(self, rel: str, real: os.stat_result | None, upper_dir: bool) -> bool:
        name = rel.rpartition("/")[2]
        if name not in self.names:
            return False
        if not (upper_dir or (real is not None and stat.S_ISDIR(real.st_mode))):
            return False
        return self.is_derived(rel)

    def _change(self, rel: str, real: os.stat_result | None) -> Change:
        """The recorded change of ``rel``, its before side taken from the real path."""
        found = self.plan.changes.get(rel)
        if found is None:
            before, mode = _real_state(self.root / rel, real)
            found = self.plan.changes[rel] = Change(before, mode)
        return found

    def _removed(self, rel: str, real: os.stat_result | None, summarised: str | None) -> None:
        """``rel`` and, for a directory, everything below it go (unless the upper re-adds
        them); a derived directory among them is summarised, not listed."""
        if real is None:
            return
        if summarised is not None:
            if summarised == rel and not stat.S_ISDIR(real.st_mode):
                self._change(rel, real)
            return
        self._change(rel, real)
        if not stat.S_ISDIR(real.st_mode):
            return
        for dirpath, dirnames, filenames in os.walk(self.root / rel):
            base = os.path.relpath(dirpath, self.root)
            for name in sorted(dirnames):
                child = f"{base}/{name}"
                if self._derived(child, os.lstat(self.root / child), False):
                    self.plan.derived.add(child)
                    dirnames.remove(name)
            for name in sorted(dirnames + filenames):
                child = f"{base}/{name}"
                self._change(child, os.lstat(self.root / child))


def real_lstat(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``root/rel`` when every parent on the way is a real directory (a
    symlinked parent is not followed: the path does not exist as such), else None."""
    parts = rel.split("/")
    path = root
    try:
        for name in parts[:-1]:
            path = path / name
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        return os.lstat(path / parts[-1])
    except (FileNotFoundError, NotADirectoryError):
        return None


def _real_state(path: Path, st: os.stat_result | None) -> tuple[EntryState, int | None]:
    if st is None:
        return MISSING, None
    return _state_of(os.fspath(path), st)


def _state_of(path: str, st: os.stat_result) -> tuple[EntryState, int | None]:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return DIRECTORY, stat.S_IMODE(mode)
    if stat.S_ISLNK(mode):
        return EntryState.symlink(os.readlink(os.fsencode(path))), None
    if stat.S_ISREG(mode):
        fd = os.open(path, _READ)
        try:
            return EntryState("file", hash_fd(fd)), stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
    return EntryState.special(st), None


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _marks(path: str, prefix: str) -> dict[str, bytes]:
    """The overlay's own extended attributes on an upper entry, without the prefix."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    out = {}
    for name in names:
        if name.startswith(prefix):
            try:
                out[name[len(prefix) :]] = os.getxattr(path, name, follow_symlinks=False)
            except OSError:
                out[name[len(prefix) :]] = b""
    return out


# -- merging -------------------------------------------------------------------------------


def apply_merge(root: Path, upper: Path, plan: MergePlan) -> None:
    """Make ``root`` hold what the command left in ``upper`` (``plan`` from that upper)."""
    as_root = os.geteuid() == 0
    for op in plan.ops:
        real = root / op.rel
        src = upper / op.rel
        if op.kind == "delete":
            _remove(real)
        elif op.kind == "dir":
            st = os.lstat(src)
            if op.replace:
                _remove(real)
            current = real_lstat(root, op.rel)
            if current is None:
                os.mkdir(real, 0o700)
                current = os.lstat(real)
            if stat.S_IMODE(current.st_mode) != stat.S_IMODE(st.st_mode):
                os.chmod(real, stat.S_IMODE(st.st_mode))
            if as_root and (current.st_uid, current.st_gid) != (st.st_uid, st.st_gid):
                os.lchown(real, st.st_uid, st.st_gid)
        elif op.rel in plan.in_place:
            _write_in_place(src, real)
        else:
            current = real_lstat(root, op.rel)
            if current is not None and stat.S_ISDIR(current.st_mode):
                _remove(real)
            _move(src, real)


def _remove(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _write_in_place(src: Path, dest: Path) -> None:
    """Rewrite ``dest``'s own inode (its other hard links see the new bytes)."""
    mode = stat.S_IMODE(os.lstat(src).st_mode)
    with open(src, "rb") as fin:
        fd = os.open(dest, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
            os.fchmod(fout.fileno(), mode)


def _move(src: Path, dest: Path) -> None:
    """Rename ``src`` over ``dest`` (one step); across file systems, copy beside ``dest``
    first and rename that."""
    try:
        os.rename(src, dest)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    temp = dest.with_name(f".{dest.name}.tidegate-merge")
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), temp)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, temp, follow_symlinks=False)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(temp, stat.S_IMODE(st.st_mode))
    else:
        os.mknod(temp, st.st_mode, st.st_rdev)
    if os.geteuid() == 0:
        os.lchown(temp, st.st_uid, st.st_gid)
    os.rename(temp, dest)
