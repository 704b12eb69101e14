"""Atomic renames within one directory: ``renameat2`` through libc, when it is there."""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

_renameat2: Callable[..., int] | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _renameat2 = _libc.renameat2
    _renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    _renameat2.restype = ctypes.c_int
except (OSError, AttributeError):  # pragma: no cover - non-glibc platforms
    _renameat2 = None


def renameat2(dir_fd: int, src: str, dst: str, flags: int) -> bool:
    """``renameat2`` within one directory. Returns False when the kernel, libc or file
    system does not support ``flags`` (the caller falls back); raises other errors."""
    if _renameat2 is None:
        return False
    rc = _renameat2(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)
