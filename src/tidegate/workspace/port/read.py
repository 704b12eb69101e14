"""Bounded reads: one pass over a file that hashes and validates all of it and keeps only
the requested window of lines."""

from __future__ import annotations

import codecs
import errno
import hashlib
import io
import os
import stat

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.entries import FILE_READ_FLAGS
from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.confine.resolution import Resolved
from tidegate.workspace.ignores import ALWAYS_EXCLUDED
from tidegate.workspace.port.errors import (
    BadQuery,
    NotAFile,
    NotUtf8,
    PathNotFound,
    SecretWithheld,
)
from tidegate.workspace.port.paths import MAX_ATTEMPTS, relative, resolve_existing
from tidegate.workspace.port.results import ReadResult, WorkspaceLimits
from tidegate.workspace.secret_files import SecretFiles

_LINE_PIECE = 1 << 20


def read_file(
    handle: RootHandle,
    limits: WorkspaceLimits,
    path: str,
    start_line: int,
    max_lines: int | None,
    secrets: SecretFiles | None = None,
) -> ReadResult:
    """Lines from ``start_line`` of the regular file at ``path`` (a final symlink is
    followed while it stays inside), within ``limits``. SecretWithheld when the resolved
    file is one ``secrets`` withholds."""
    if start_line < 1:
        raise BadQuery(f"start_line must be 1 or more, not {start_line}")
    if max_lines is not None and max_lines < 1:
        raise BadQuery(f"max_lines must be 1 or more, not {max_lines}")
    lines = min(max_lines or limits.max_read_lines, limits.max_read_lines)
    rel = relative(handle, path)
    for _ in range(MAX_ATTEMPTS):
        where = resolve_existing(handle, rel, path, follow_final=True)
        try:
            if ALWAYS_EXCLUDED in where.rel.parts:
                raise PathRefused(path, "git_dir")
            if secrets is not None and secrets.withheld(where.rel):
                raise SecretWithheld(path)
            fd = _open_file(where, path)
            if fd is None:
                continue  # swapped for a symlink between resolve and open: again
        finally:
            where.close()
        with os.fdopen(fd, "rb") as fh:
            return read_window(fh, str(where.rel), start_line, lines, limits.max_read_bytes)
    raise PathRefused(path, "unstable")


def _open_file(where: Resolved, path: str) -> int | None:
    """A read descriptor of the regular file at ``where``; None when a symlink was
    swapped in since it was resolved."""
    if where.name is None:
        raise NotAFile(path, "dir")
    try:
        fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
    except FileNotFoundError:
        raise PathNotFound(path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile(path, "dir" if stat.S_ISDIR(mode) else "special")
    return fd


def read_window(
    fh: io.BufferedReader, rel: str, start: int, max_lines: int, max_bytes: int
) -> ReadResult:
    """One pass over the file: hash and validate all of it, keep the requested lines.

    Lines are read in pieces of at most 1 MiB, so one enormous line never has to fit in
    memory; a first line larger than ``max_bytes`` is returned cut (``truncated_line``).
    """
    digest = hashlib.sha256()
    validator = codecs.getincrementaldecoder("utf-8")()
    valid = True
    window = _Window(start, max_lines, max_bytes)
    line_no = size = 0
    at_line_start = True
    while piece := fh.readline(_LINE_PIECE):
        size += len(piece)
        digest.update(piece)
        if valid:
            try:
                validator.decode(piece)
            except UnicodeDecodeError:
                valid = False
        if at_line_start:
            line_no += 1
        window.offer(piece, line_no, at_line_start)
        at_line_start = piece.endswith(b"\n")
    if valid:
        try:
            validator.decode(b"", final=True)
        except UnicodeDecodeError:
            valid = False
    sha = "sha256:" + digest.hexdigest()
    if not valid:
        raise NotUtf8(rel, "file", sha)
    # final=False drops only a character split by the cut; the file itself is valid.
    text = codecs.getincrementaldecoder("utf-8")().decode(b"".join(window.kept), final=False)
    end = start + window.kept_lines - 1
    more = end < line_no
    return ReadResult(
        path=rel,
        content=text,
        sha256=sha,
        size=size,
        start_line=start,
        end_line=end,
        total_lines=line_no,
        truncated=more or window.cut_line is not None,
        next_start_line=end + 1 if more else None,
        truncated_line=window.cut_line,
    )


class _Window:
    """The lines a read keeps: from line ``start``, at most ``max_lines`` lines and
    ``max_bytes`` bytes; a first line too long for them alone is kept cut (``cut_line``)."""

    def __init__(self, start: int, max_lines: int, max_bytes: int) -> None:
        self.start = start
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.kept: list[bytes] = []
        self.kept_bytes = self.kept_lines = 0
        self.line_begins = 0  # index in ``kept`` where the current line's pieces start
        self.full = False
        self.cut_line: int | None = None

    def offer(self, piece: bytes, line_no: int, at_line_start: bool) -> None:
        """Keep ``piece`` (of line ``line_no``; the line's first piece when
        ``at_line_start``) if the window wants it and it fits."""
        if self.full or line_no < self.start:
            return
        if at_line_start and self.kept_lines == self.max_lines:
            self.full = True
        elif self.kept_bytes + len(piece) <= self.max_bytes:
            if at_line_start:
                self.line_begins = len(self.kept)
                self.kept_lines += 1
            self.kept.append(piece)
            self.kept_bytes += len(piece)
        elif self.kept_lines == 0 or (self.kept_lines == 1 and not at_line_start):
            self.kept.append(
                piece[: self.max_bytes - self.kept_bytes]
            )  # the first line alone is too long
            self.kept_lines, self.cut_line, self.full = 1, line_no, True
        else:
            if not at_line_start:  # drop the part of this line already kept
                del self.kept[self.line_begins :]
                self.kept_lines -= 1
            self.full = True
