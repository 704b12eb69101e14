"""A per-command overlay over the workspace: the command's writes land in an upper dir.

The child that will become the command (or the bubblewrap in front of it) enters a mount
namespace of its own before ``exec`` (``unshare(CLONE_NEWNS)``; when tidegate is not root,
``CLONE_NEWUSER`` too, with the caller's own uid and gid mapped to themselves, so the
command runs as the same user and loses the namespace's capabilities at ``exec``) and
mounts overlayfs on the workspace's own path: the real workspace is the lower layer, a
fresh directory under the OS temp dir the upper. The real workspace is therefore not
written at all while the command runs; afterwards the upper directory *is* the change
set: new and modified entries, whiteouts for deletions, opaque directories for
directories that were replaced (``workspace/overlay_merge.py`` reads it and merges it
back). Overlay features that would make the upper harder to read exactly are switched
off: ``redirect_dir=off`` (renaming a directory that exists below fails with EXDEV, which
``mv`` and most tools handle by copying) and ``metacopy=off``. As root ``index=on``: a
write through one name of a hard-linked file is seen through its other names during the
command, and the copied-up file carries an ``origin`` mark. In a user namespace
``userxattr`` rules ``index`` out: there a write through one name of a hard-linked file
is not seen through the others until the merge, and is merged as a replacement.

Teardown is kept off the command's critical path. The child hands tidegate a descriptor
of its mount namespace (over a socket pair, ``SCM_RIGHTS``) before it execs, so the
command's exit does not drop the last reference to the namespace: unmounting an overlay
takes milliseconds, and that now happens when ``Overlay.release`` closes the descriptor
on a background thread, after the merge. The mount is ``volatile`` (the upper layer is
never synced: it lives only until the merge moves its entries out).

``probe()`` mounts an overlay once per process on a scratch directory, writes, deletes
and checks the upper layout, and says why when it cannot (not Linux, no user namespaces,
an upper file system without the needed extended attributes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tidegate.faults import maybe_fail

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_OPTIONS = "redirect_dir=off,metacopy=off"


@dataclass(frozen=True)
class OverlaySupport:
    """Whether per-command overlays work here, and how (``xattr_prefix``: where overlayfs
    keeps its marks in the upper layer, ``trusted.overlay.`` as root, ``user.overlay.``
    in a user namespace)."""

    available: bool
    reason: str
    user_namespace: bool = False
    xattr_prefix: str = "trusted.overlay."


class _Libc:
    """libc's mount and unshare, resolved once in the parent: nothing is loaded after fork."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.mount = libc.mount
        self.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        self.mount.argtypes += [ctypes.c_ulong, ctypes.c_char_p]
        self.unshare = libc.unshare
        self.unshare.argtypes = [ctypes.c_int]


@lru_cache(maxsize=1)
def _libc() -> _Libc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _Libc()
    except (OSError, AttributeError):
        return None


def _as_user() -> bool:
    return os.geteuid() != 0


@dataclass
class Overlay:
    """One command's overlay: ``upper`` collects what it writes below ``lower``.

    Use: ``preexec`` as the child's ``preexec_fn``; ``adopt()`` right after the spawn
    (takes the namespace descriptor the child sent); ``release()`` when the upper has
    been merged (unmounts and removes the scratch dirs in the background).
    """

    lower: Path
    support: OverlaySupport
    faults: bool = True
    """Whether the ``overlay.mount`` fault point applies (not to the probe)."""
    base: Path = field(init=False)
    upper: Path = field(init=False)
    _ns_fd: int | None = field(default=None, init=False)
    _sockets: tuple[socket.socket, socket.socket] | None = field(default=None, init=False)
    _options: bytes = field(default=b"", init=False)
    _maps: tuple[bytes, bytes] = field(default=(b"", b""), init=False)
    _libc: _Libc | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.lower = Path(os.path.realpath(self.lower))
        self._libc = _libc()
        if self._libc is None:
            raise OSError("overlay capture needs Linux")
        self.base = Path(tempfile.mkdtemp(prefix="tidegate-overlay-"))
        self.upper = self.base / "upper"
        work = self.base / "work"
        self.upper.mkdir()
        work.mkdir()
        # the overlay's root takes its attributes from the upper dir: make them the
        # workspace root's, or the command would see a 0700 root
        st = os.stat(self.lower)
        os.chmod(self.upper, st.st_mode & 0o7777)
        if not _as_user():
            os.chown(self.upper, st.st_uid, st.st_gid)
        opts = f"lowerdir={_escape(self.lower)},upperdir={_escape(self.upper)}"
        opts += f",workdir={_escape(work)},{_OPTIONS},volatile"
        # index=on keeps hard links whole inside the overlay and marks a copied-up file
        # (``origin``) even when its lower inode has other links; userxattr refuses it
        opts += ",userxattr,index=off" if self.support.user_namespace else ",index=on"
        self._options = os.fsencode(opts)
        uid, gid = os.geteuid(), os.getegid()
        self._maps = (f"{uid} {uid} 1\n".encode(), f"{gid} {gid} 1\n".encode())
        self._sockets = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)

    def preexec(self) -> None:
        """Runs in the forked child before exec: a private mount namespace with the overlay
        on the workspace path, the working directory re-entered through it, and the
        namespace's descriptor sent to the parent. Only syscalls: no imports, no locks."""
        libc = self._libc
        assert libc is not None and self._sockets is not None
        if self.faults:
            maybe_fail("overlay.mount")
        flags = _CLONE_NEWNS | (_CLONE_NEWUSER if self.support.user_namespace else 0)
        if libc.unshare(flags) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        if self.support.user_namespace:
            _write(b"/proc/self/setgroups", b"deny")
            _write(b"/proc/self/uid_map", self._maps[0])
            _write(b"/proc/self/gid_map", self._maps[1])
        if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
        target = os.fsencode(self.lower)
        if libc.mount(b"overlay", target, b"overlay", 0, self._options) != 0:
            raise OSError(ctypes.get_errno(), "mount overlay")
        os.chdir(os.getcwd())  # the cwd was entered before the mount: re-enter it above
        ns = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        socket.send_fds(self._sockets[1], [b"n"], [ns])

    def adopt(self) -> None:
        """Take the child's namespace descriptor (after a successful spawn)."""
        assert self._sockets is not None
        self._sockets[0].settimeout(5.0)
        try:
            _msg, fds, _flags, _addr = socket.recv_fds(self._sockets[0], 1, 1)
        except OSError:
            fds = []  # then the command's exit tears the namespace down: slower, not wrong
        self._ns_fd = fds[0] if fds else None
        self._close_sockets()

    def release(self, *, background: bool = True) -> None:
        """Unmount (drop the namespace) and remove the scratch dirs."""
        self._close_sockets()
        fd, self._ns_fd = self._ns_fd, None

        if background:
            _reaper().put((fd, self.base))
        else:
            _teardown(fd, self.base)

    def _close_sockets(self) -> None:
        if self._sockets is not None:
            for sock in self._sockets:
                sock.close()
            self._sockets = None


def _teardown(fd: int | None, base: Path) -> None:
    if fd is not None:
        os.close(fd)  # the last reference: the overlay is unmounted here
    remove_tree(base)


@lru_cache(maxsize=1)
def _reaper() -> queue.SimpleQueue[tuple[int | None, Path]]:
    """One background thread that unmounts and removes released overlays in order."""
    work: queue.SimpleQueue[tuple[int | None, Path]] = queue.SimpleQueue()

    def loop() -> None:
        while True:
            fd, base = work.get()
            _teardown(fd, base)

    threading.Thread(target=loop, name="tidegate-overlay-reaper", daemon=True).start()
    return work


def _write(path: bytes, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _escape(path: Path) -> str:
    """Overlay options are comma-separated and ':' separates lower layers."""
    text = str(path)
    if any(c in text for c in ",:\\\n"):
        raise OSError(f"path not usable in overlay options: {text!r}")
    return text


def remove_tree(path: Path) -> None:
    """Remove a scratch tree even where the command left read-only directories."""
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                with contextlib.suppress(OSError):
                    os.chmod(child, 0o700)
    shutil.rmtree(path, ignore_errors=True)


# -- the probe -----------------------------------------------------------------------------

_PROBE_COMMAND = "echo new > created && echo changed > kept && rm gone && mkdir dir"


@lru_cache(maxsize=1)
def probe() -> OverlaySupport:
    """Whether a per-command overlay works here: mounted, written through, and read back
    as expected (a new file, a copied-up file, a whiteout). Once per process."""
    if _libc() is None:
        return OverlaySupport(False, "overlay capture needs Linux")
    as_user = _as_user()
    support = OverlaySupport(
        True,
        "overlayfs in a private mount namespace" + (" inside a user namespace" if as_user else ""),
        user_namespace=as_user,
        xattr_prefix="user.overlay." if as_user else "trusted.overlay.",
    )
    scratch = Path(tempfile.mkdtemp(prefix="tidegate-overlay-probe-"))
    try:
        lower = scratch / "lower"
        lower.mkdir()
        (lower / "kept").write_text("old\n")
        (lower / "gone").write_text("old\n")
        try:
            overlay = Overlay(lower, support, faults=False)
        except OSError as exc:
            return OverlaySupport(False, f"overlay capture unavailable: {exc}")
        try:
            try:
                done = subprocess.run(
                    ["/bin/sh", "-c", _PROBE_COMMAND],
                    cwd=lower,
                    preexec_fn=overlay.preexec,
                    capture_output=True,
                    timeout=15,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                return OverlaySupport(False, f"overlay capture unavailable: {exc}")
            upper = overlay.upper
            checks = {
                "the command failed": done.returncode == 0,
                "the lower layer was written": (lower / "kept").read_text() == "old\n"
                and (lower / "gone").exists(),
                "no new file in the upper layer": (upper / "created").is_file(),
                "no copied-up file in the upper layer": (upper / "kept").is_file(),
                "no whiteout for a deletion": _is_whiteout(upper / "gone"),
            }
            failed = [what for what, ok in checks.items() if not ok]
            if failed:
                why = done.stderr.decode("utf-8", "replace").strip()[:200]
                return OverlaySupport(
                    False, f"overlay capture unavailable: {failed[0]} {why}".strip()
                )
            return support
        finally:
            overlay.release(background=False)
    finally:
        remove_tree(scratch)


def _is_whiteout(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0
