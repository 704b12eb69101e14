"""The workspace port: confined, bounded, preconditioned access to the user's workspace.

Every workspace tool goes through a ``WorkspacePort``. What it guarantees:

* **Confinement.** Paths resolve beneath the root through ``confine.RootHandle`` (no-follow
  opens relative to directory descriptors; symlinks followed only while they stay inside).
* **Preconditions in the commit.** ``write``/``edit``/``delete`` carry the SHA-256 the
  caller last saw (or ``"must_not_exist"``). The check and the change happen under one
  lock (a thread lock plus ``flock`` on the root, so tidegate processes serialise), and the
  change itself re-checks atomically: a create is ``renameat2(RENAME_NOREPLACE)``, a
  replace is ``renameat2(RENAME_EXCHANGE)`` followed by a check that what was swapped out
  is the very inode and content that was verified (if not, it is swapped back and the call
  fails as stale). A stale call changes nothing: same bytes, same inode.
* **Atomic writes.** New content is written to a temp file in the same directory, fsynced,
  and renamed into place; a file is never rewritten in place. A hard-linked file therefore
  gets a new inode at this path while its other names keep the old content -- nothing
  outside the root is ever written through a hard link.
* **Secrets withheld.** Secret-shaped files (``secret_files``: ``.env``, private keys,
  ``.npmrc``...) are not read, edited or searched, and listings name them only under
  ``excluded``, unless the user allows them (``SecretFiles.allowed``).
* **Bounds.** Reads, listings, globs and greps stop at configured limits, say so
  (``truncated``) and return an opaque cursor to continue. Traversals skip ``.git`` and,
  unless asked, what git ignores; what they skipped is disclosed in ``excluded``.

The remaining window: a process that already holds the old file open and writes into it in
place while a replace commits writes into the inode that is then unlinked. Writers that
replace files (editors, git) or open after the commit are never lost silently.

This module is the entry point; the work is done in ``port_read`` (bounded reads),
``port_search`` (list, glob, grep; with ``port_glob`` and ``port_cursor``) and
``port_commit`` (the commit lock and preconditioned changes). Errors are in
``port_errors``, the records returned and the limits in ``port_results``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.refusal import PathRefused, check_relative
from tidegate.workspace.confine.resolution import Resolved
from tidegate.workspace.ignores import GitView, git_view
from tidegate.workspace.port.commit import Committer
from tidegate.workspace.port.errors import (
    BadQuery,
    EditNotApplicable,
    NotADirectory,
    NotAFile,
    NotUtf8,
    PathNotFound,
    SecretWithheld,
    StalePrecondition,
    TooLarge,
    WorkspaceError,
)
from tidegate.workspace.port.lock import RootLock
from tidegate.workspace.port.paths import mutable
from tidegate.workspace.port.read import read_file
from tidegate.workspace.port.results import (
    MUST_NOT_EXIST,
    GrepMatch,
    GrepResult,
    ListEntry,
    Listing,
    Mutation,
    Precondition,
    ReadResult,
    WorkspaceLimits,
)
from tidegate.workspace.port.search import Search
from tidegate.workspace.secret_files import SecretFiles
from tidegate.workspace.states import EntryState

__all__ = [
    "MUST_NOT_EXIST",
    "BadQuery",
    "EditNotApplicable",
    "GrepMatch",
    "GrepResult",
    "ListEntry",
    "Listing",
    "Mutation",
    "NotADirectory",
    "NotAFile",
    "NotUtf8",
    "PathNotFound",
    "PathRefused",
    "Precondition",
    "ReadResult",
    "SecretFiles",
    "SecretWithheld",
    "StalePrecondition",
    "TooLarge",
    "WorkspaceError",
    "WorkspaceLimits",
    "WorkspacePort",
]


class WorkspacePort:
    """Confined, bounded, preconditioned operations on the workspace at ``root``."""

    def __init__(
        self,
        root: Path,
        limits: WorkspaceLimits | None = None,
        secrets: SecretFiles | None = None,
    ) -> None:
        self._handle = RootHandle(root)
        self.root = self._handle.root
        self.limits = limits or WorkspaceLimits()
        self.secrets = secrets or SecretFiles()
        self._lock = RootLock.of(str(self._handle.real_root))
        self._finalizer = weakref.finalize(self, RootHandle.close, self._handle)
        self._git_checked = False
        self._git_view: GitView | None = None

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> WorkspacePort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the port's commit lock: no write, edit or delete through any port on this
        root (in this process, or another tidegate process) runs meanwhile. The tool
        executor holds it around a command's before/after inventory."""
        with self._lock.held():
            yield

    @contextmanager
    def yielded(self) -> Iterator[None]:
        """Inside ``exclusive``: let other writers in for a while (the executor, while a
        command runs in an overlay, whose writes reach the workspace only at the merge,
        which it makes under the lock again)."""
        with self._lock.released():
            yield

    # -- observation -----------------------------------------------------------------------

    def state(self, path: str) -> EntryState:
        """The typed state of the entry at ``path`` (a final symlink is not followed)."""
        return self._handle.state(path)

    def read(self, path: str, *, start_line: int = 1, max_lines: int | None = None) -> ReadResult:
        return read_file(self._handle, self.limits, path, start_line, max_lines, self.secrets)

    def list(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
        exclude_names: Sequence[str] = (),
    ) -> Listing:
        """Entries below the directory ``path`` down to ``depth`` levels. Directories named
        in ``exclude_names`` (e.g. ``node_modules``) are listed as excluded, not entered."""
        return self._search().list_dir(
            path,
            depth=depth,
            cursor=cursor,
            limit=limit,
            include_ignored=include_ignored,
            exclude_names=exclude_names,
        )

    def glob(
        self,
        pattern: str,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
    ) -> Listing:
        """Paths matching ``pattern`` (``*``, ``?``, ``[...]``, ``{a,b}``; ``**`` spans
        directories; a pattern without ``/`` matches only at the top level)."""
        return self._search().glob(
            pattern, cursor=cursor, limit=limit, include_ignored=include_ignored
        )

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        regex: bool = False,
        case_sensitive: bool = True,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
    ) -> GrepResult:
        """Lines matching ``pattern`` in the files under ``path`` (a file or directory).
        ``glob`` filters files: by name when it has no ``/``, else by root-relative path."""
        return self._search().grep(
            pattern,
            path=path,
            glob=glob,
            regex=regex,
            case_sensitive=case_sensitive,
            cursor=cursor,
            limit=limit,
            include_ignored=include_ignored,
        )

    def resolved(self, path: str) -> str:
        """Where a write to ``path`` would land: symlinked directories on the way followed
        beneath the root, missing directories as spelled, the final name not followed
        (writes replace it). PathRefused when the path is refused or leaves the root.
        Policy judges this form as well as the spelling."""
        rel = mutable(self._handle, path)
        parts = rel.parts
        for keep in range(len(parts) - 1, -1, -1):
            try:
                where = self._handle.resolve(PurePosixPath(*parts[:keep]), follow_final=True)
            except (FileNotFoundError, NotADirectoryError):
                continue
            where.close()
            base = () if where.rel.parts == (".",) else where.rel.parts
            return "/".join((*base, *parts[keep:]))
        return str(rel)

    # -- mutation -------------------------------------------------------------------------

    def write(self, path: str, content: str, *, expect: Precondition) -> Mutation:
        """Create (``expect="must_not_exist"``) or replace (``expect=<sha256 last seen>``)
        the file at ``path`` with ``content`` encoded as UTF-8."""
        return self._committer().write(path, content, expect=expect)

    def edit(
        self, path: str, *, old: str, new: str, expect: str, replace_all: bool = False
    ) -> Mutation:
        """Replace ``old`` with ``new`` in the UTF-8 text file at ``path``, whose content
        hash must still be ``expect``. ``old`` must occur exactly once unless
        ``replace_all``. A file in CRLF form also matches ``old`` written with LF.
        A withheld (secret-shaped) file is refused: edits would reveal its content."""
        self._refuse_secret(path)
        return self._committer().edit(
            path, old=old, new=new, expect=expect, replace_all=replace_all
        )

    def delete(self, path: str, *, expect: str) -> Mutation:
        """Remove the file, symlink or special entry at ``path`` if it still has state hash
        ``expect``. Directories are not deleted; parents are left alone."""
        return self._committer().delete(path, expect=expect)

    # -- internals -------------------------------------------------------------------------

    def _replace(
        self, where: Resolved, path: str, expect: str, transform: Callable[[bytes], bytes]
    ) -> Mutation:
        """The commit step of a replace, without the lock (tests race it directly)."""
        return self._committer().replace(where, path, expect, transform)

    def _refuse_secret(self, path: str) -> None:
        """SecretWithheld when ``path`` resolves to a withheld file (a missing one is left
        for the operation to report)."""
        try:
            where = self._handle.resolve(check_relative(path), follow_final=True)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            if self.secrets.withheld(where.rel):
                raise SecretWithheld(path)
        finally:
            where.close()

    def _committer(self) -> Committer:
        return Committer(self._handle, self.limits, self._lock)

    def _search(self) -> Search:
        return Search(self._handle, self.limits, self.git_view, self.secrets)

    def git_view(self) -> GitView | None:
        """The git work tree of this root as first seen (None: not in one), pinned: later
        calls return the same view, so a ``.git`` planted below the root afterwards is
        never discovered. Its git runs no filter driver: the ``.git`` may be one that a
        command made before this process first looked."""
        if not self._git_checked:
            self._git_view = git_view(self._handle.real_root, filters=False)
            self._git_checked = True
        return self._git_view
