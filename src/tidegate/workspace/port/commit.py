"""Preconditioned commits: the port's write, edit and delete.

The check and the change happen under the root's commit lock (``RootLock``), and the
change re-checks atomically: a create is ``renameat2(RENAME_NOREPLACE)``, a replace is
``renameat2(RENAME_EXCHANGE)`` followed by a check that what was swapped out is the very
inode and content that was verified (if not, it is swapped back and the call is stale), a
delete renames the entry aside and checks it the same way. New content always goes to a
fsynced temp file in the same directory first; a file is never rewritten in place.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from contextlib import suppress
from pathlib import PurePosixPath

import msgspec

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.entries import FILE_READ_FLAGS, entry_state
from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.confine.rename import RENAME_EXCHANGE, RENAME_NOREPLACE, renameat2
from tidegate.workspace.confine.resolution import Resolved
from tidegate.workspace.fs import creation_mode
from tidegate.workspace.ignores import ALWAYS_EXCLUDED
from tidegate.workspace.port.errors import (
    BadQuery,
    EditNotApplicable,
    NotADirectory,
    NotAFile,
    NotUtf8,
    StalePrecondition,
    TooLarge,
)
from tidegate.workspace.port.files import fsync_dir, read_all, rehash, temp_name, write_temp
from tidegate.workspace.port.lock import RootLock
from tidegate.workspace.port.paths import MAX_ATTEMPTS, mutable
from tidegate.workspace.port.policy import check_config_change, read_current
from tidegate.workspace.port.results import (
    MUST_NOT_EXIST,
    Mutation,
    Precondition,
    WorkspaceLimits,
)
from tidegate.workspace.states import MISSING, EntryState, is_sha256, sha256_bytes


class Committer(msgspec.Struct, frozen=True):
    """Write, edit and delete beneath one root, each under ``lock`` and each checked
    against the state the caller last saw."""

    handle: RootHandle
    limits: WorkspaceLimits
    lock: RootLock

    def write(self, path: str, content: str, *, expect: Precondition) -> Mutation:
        _check_precondition(expect)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise NotUtf8(path, "content") from None
        rel = mutable(self.handle, path)
        with self.lock.held():
            if expect == MUST_NOT_EXIST:
                return self._create(rel, path, data)
            where = self._resolve_for_change(rel, path, expect)
            try:
                return self.replace(where, path, expect, lambda _old: data)
            finally:
                where.close()

    def edit(self, path: str, *, old: str, new: str, expect: str, replace_all: bool) -> Mutation:
        if not is_sha256(expect):
            raise BadQuery(f"expect must be the sha256 you last read, not {expect!r}")
        if not old:
            raise BadQuery("old text must not be empty")
        for label, text in (("old", old), ("new", new)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise NotUtf8(path, label) from None
        if old == new:
            raise EditNotApplicable(path, "no_change")
        rel = mutable(self.handle, path)
        counted: list[int] = []

        def transform(current: bytes) -> bytes:
            try:
                text = current.decode("utf-8")
            except UnicodeDecodeError:
                raise NotUtf8(path, "file", expect) from None
            before, after = old, new
            count = text.count(before)
            if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
                before, after = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
                count = text.count(before)
            if count == 0:
                raise EditNotApplicable(path, "not_found")
            if count > 1 and not replace_all:
                raise EditNotApplicable(path, "ambiguous", count)
            counted.append(count if replace_all else 1)
            return text.replace(before, after, -1 if replace_all else 1).encode("utf-8")

        with self.lock.held():
            where = self._resolve_for_change(rel, path, expect)
            try:
                mutation = self.replace(where, path, expect, transform)
            finally:
                where.close()
        return Mutation(
            mutation.path,
            mutation.before,
            mutation.after,
            size=mutation.size,
            replacements=counted[-1],
        )

    def delete(self, path: str, *, expect: str) -> Mutation:
        if not is_sha256(expect):
            raise BadQuery(f"expect must be the sha256 you last saw, not {expect!r}")
        rel = mutable(self.handle, path)
        with self.lock.held():
            where = self._resolve_for_change(rel, path, expect)
            try:
                return self._remove(where, path, expect)
            finally:
                where.close()

    def replace(
        self, where: Resolved, path: str, expect: str, transform: Callable[[bytes], bytes]
    ) -> Mutation:
        """Replace the file at ``where``, which must still hash to ``expect``, with
        ``transform`` of its content. The caller holds the lock."""
        assert where.name is not None
        name = where.name
        old_fd, old_st, current = self._open_expected_file(where, path, expect)
        try:
            new = transform(current)
            self._check_size(path, len(new))
            check_config_change(self.handle, where, path, current, new)
            rel = str(where.rel)
            after = EntryState("file", sha256_bytes(new))
            if new == current:
                return Mutation(rel, after, after, size=len(new))
            owner = (old_st.st_uid, old_st.st_gid)
            tmp = write_temp(where.dir_fd, name, new, stat.S_IMODE(old_st.st_mode), owner)
            if renameat2(where.dir_fd, tmp, name, RENAME_EXCHANGE):
                # What now sits at tmp must be the inode we verified, still with the
                # verified content; otherwise someone changed it in between: undo.
                swapped = os.stat(tmp, dir_fd=where.dir_fd, follow_symlinks=False)
                same = (swapped.st_dev, swapped.st_ino) == (old_st.st_dev, old_st.st_ino)
                if not same or rehash(old_fd) != expect:
                    renameat2(where.dir_fd, tmp, name, RENAME_EXCHANGE)
                    os.unlink(tmp, dir_fd=where.dir_fd)
                    raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
                os.unlink(tmp, dir_fd=where.dir_fd)
            else:
                # No RENAME_EXCHANGE on this file system: check once more, then replace.
                now = os.stat(name, dir_fd=where.dir_fd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (old_st.st_dev, old_st.st_ino) or (
                    rehash(old_fd) != expect
                ):
                    os.unlink(tmp, dir_fd=where.dir_fd)
                    raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
                os.replace(tmp, name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
            fsync_dir(where.dir_fd)
            return Mutation(rel, EntryState("file", expect), after, size=len(new))
        finally:
            os.close(old_fd)

    # -- internals --------------------------------------------------------------------------

    def _resolve_for_change(self, rel: PurePosixPath, path: str, expect: str) -> Resolved:
        try:
            where = self.handle.resolve(rel)
        except (FileNotFoundError, NotADirectoryError):
            raise StalePrecondition(path, expect, MISSING) from None
        assert where.name is not None
        if ALWAYS_EXCLUDED in where.rel.parts:
            where.close()
            raise PathRefused(path, "git_dir")
        return where

    def _create(self, rel: PurePosixPath, path: str, data: bytes) -> Mutation:
        try:
            where = self.handle.resolve(rel, create_dirs=True)
        except NotADirectoryError:
            raise NotADirectory(str(rel.parent)) from None
        assert where.name is not None
        name = where.name
        try:
            if ALWAYS_EXCLUDED in where.rel.parts:
                raise PathRefused(path, "git_dir")
            check_config_change(self.handle, where, path, None, data)
            current = entry_state(where.dir_fd, name)
            if current.kind == "symlink":
                self._refuse_escaping_link(where, path)
            if current != MISSING:
                raise StalePrecondition(path, MUST_NOT_EXIST, current)
            self._check_size(path, len(data))
            try:
                tmp = write_temp(where.dir_fd, name, data, creation_mode(False), None)
            except FileNotFoundError:
                # The directory we resolved was removed meanwhile: nothing was written.
                raise PathRefused(path, "unstable") from None
            try:
                if not renameat2(where.dir_fd, tmp, name, RENAME_NOREPLACE):
                    # No RENAME_NOREPLACE here: link(2) also refuses an existing name.
                    os.link(
                        tmp,
                        name,
                        src_dir_fd=where.dir_fd,
                        dst_dir_fd=where.dir_fd,
                        follow_symlinks=False,
                    )
                    os.unlink(tmp, dir_fd=where.dir_fd)
            except FileExistsError:
                with suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=where.dir_fd)
                raise StalePrecondition(
                    path, MUST_NOT_EXIST, entry_state(where.dir_fd, name)
                ) from None
            fsync_dir(where.dir_fd)
            return Mutation(
                str(where.rel),
                MISSING,
                EntryState("file", sha256_bytes(data)),
                where.created,
                len(data),
            )
        except BaseException:
            self._remove_created(where.created)
            raise
        finally:
            where.close()

    def _open_expected_file(
        self, where: Resolved, path: str, expect: str
    ) -> tuple[int, os.stat_result, bytes]:
        """Open the regular file at ``where`` and check it still hashes to ``expect``."""
        assert where.name is not None
        for _ in range(MAX_ATTEMPTS):
            current = entry_state(where.dir_fd, where.name)
            if current.kind != "file":
                if current.kind in ("dir", "special"):
                    raise NotAFile(path, current.kind)
                if current.kind == "symlink":
                    target = self._refuse_escaping_link(where, path)
                    raise NotAFile(path, "symlink", f"is a symlink; write or edit {target}")
                raise StalePrecondition(path, expect, current)
            try:
                fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOENT):
                    continue
                raise
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                continue
            if st.st_size > self.limits.max_edit_bytes:
                os.close(fd)
                raise TooLarge(path, st.st_size, self.limits.max_edit_bytes)
            data = read_all(fd)
            if sha256_bytes(data) != expect:
                os.close(fd)
                raise StalePrecondition(path, expect, EntryState.file(data))
            return fd, st, data
        raise PathRefused(path, "unstable")

    def _refuse_escaping_link(self, where: Resolved, path: str) -> str:
        """Raise PathRefused when the symlink at ``where`` leads out of the root; else
        return the canonical path it leads to."""
        link = where.rel
        target = self.handle.resolve(link, follow_final=True)  # raises on an escape
        target.close()
        return str(target.rel)

    def _remove(self, where: Resolved, path: str, expect: str) -> Mutation:
        assert where.name is not None
        name = where.name
        current = entry_state(where.dir_fd, name)
        if current.kind == "dir":
            raise NotAFile(path, "dir", "is a directory; only files and symlinks are deleted")
        if current.sha256 != expect:
            raise StalePrecondition(path, expect, current)
        old = read_current(where) if current.kind == "file" else None
        check_config_change(self.handle, where, path, old, None)
        st = os.stat(name, dir_fd=where.dir_fd, follow_symlinks=False)
        tmp = temp_name(name)
        os.rename(name, tmp, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
        moved = os.stat(tmp, dir_fd=where.dir_fd, follow_symlinks=False)
        if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino) or (
            entry_state(where.dir_fd, tmp) != current
        ):
            if not renameat2(where.dir_fd, tmp, name, RENAME_NOREPLACE):
                os.link(
                    tmp,
                    name,
                    src_dir_fd=where.dir_fd,
                    dst_dir_fd=where.dir_fd,
                    follow_symlinks=False,
                )
                os.unlink(tmp, dir_fd=where.dir_fd)
            raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
        os.unlink(tmp, dir_fd=where.dir_fd)
        fsync_dir(where.dir_fd)
        return Mutation(str(where.rel), current, MISSING)

    def _remove_created(self, created: tuple[str, ...]) -> None:
        for rel in reversed(created):
            with suppress(OSError):
                where = self.handle.resolve(PurePosixPath(rel))
                try:
                    assert where.name is not None
                    os.rmdir(where.name, dir_fd=where.dir_fd)
                finally:
                    where.close()

    def _check_size(self, path: str, size: int) -> None:
        if size > self.limits.max_edit_bytes:
            raise TooLarge(path, size, self.limits.max_edit_bytes)


def _check_precondition(expect: str) -> None:
    if expect != MUST_NOT_EXIST and not is_sha256(expect):
        raise BadQuery(f"expect must be 'must_not_exist' or a sha256 you saw, not {expect!r}")
