"""A per-command overlay over the workspace: the command's writes land in an upper dir.

For each command, overlayfs is mounted on the workspace's own path -- the real workspace
the lower layer, a fresh directory under the OS temp dir the upper -- in a mount
namespace of tidegate's own, and the command runs in that namespace. The real workspace
is therefore not written at all while the command runs; afterwards the upper directory
*is* the change set: new and modified entries, whiteouts for deletions, opaque
directories for directories that were replaced (``workspace/overlay_merge.py`` reads it
and merges it back). Overlay features that would make the upper harder to read exactly
are off: ``redirect_dir=off`` (renaming a directory that exists below fails with EXDEV,
which ``mv`` and most tools handle by copying) and ``metacopy=off``. As root ``index=on``:
a write through one name of a hard-linked file is seen through its other names during
the command, and the copied-up file carries an ``origin`` mark. In a user namespace
``userxattr`` rules ``index`` out: there a write through one name of a hard-linked file is
not seen through the others until the merge, and is merged as a replacement. The mount is
``volatile``: the upper layer is never synced, it lives only until the merge empties it.

The namespace is held by one small helper process per tidegate process (``Host``: a
``python -I -S`` that unshares a mount namespace -- and, when tidegate is not root, a
user namespace mapping the caller's own uid and gid to themselves -- makes its mounts
slaves of the host's, so later host mounts still show, then mounts and unmounts overlays
on request). A command joins it with ``nsenter`` in front of its argv, in the working
directory the helper entered for it (through the overlay). Both choices are
measured: forking tidegate itself to set the namespace up in a ``preexec_fn`` cost
several times the whole command (``fork`` of a large process, where ``subprocess``
otherwise uses ``vfork``), and a namespace created per command pays its teardown on the
command's exit.

``probe()`` mounts an overlay once per process on a scratch directory, writes, deletes
and checks the upper layout through the same path, and says why when it cannot (not
Linux, no ``nsenter``, no user namespaces, an upper file system without the needed
extended attributes).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import msgspec

from tidegate.disk.faults import maybe_fail
from tidegate.exec.overlay.host import Host, as_user, namespace_host, nsenter
from tidegate.exec.trees import remove_tree

_OPTIONS = "metacopy=off,volatile"


class OverlaySupport(msgspec.Struct, frozen=True):
    """Whether per-command overlays work here, and how (``xattr_prefix``: where overlayfs
    keeps its marks in the upper layer, ``trusted.overlay.`` as root, ``user.overlay.``
    in a user namespace)."""

    available: bool
    reason: str
    user_namespace: bool = False
    xattr_prefix: str = "trusted.overlay."


class Overlay:
    """One command's overlay: ``upper`` collects what it writes below ``lower``.

    Creating it mounts the overlay (OSError when it cannot); ``prefix(cwd)`` goes in front
    of the command's argv; ``release()`` unmounts it and removes the scratch dirs once the
    upper layer has been merged. One overlay per ``lower`` at a time. ``faults``: whether
    the ``overlay.mount`` fault point applies (not to the probe). ``parent``: where its
    scratch dirs go (a run's claimed scratch dir, swept after a kill); default: this
    process's own directory under the OS temp dir.
    """

    base: Path
    upper: Path

    def __init__(
        self,
        lower: Path,
        support: OverlaySupport,
        *,
        faults: bool = True,
        parent: Path | None = None,
    ) -> None:
        self.support = support
        self.faults = faults
        self.parent = parent
        self._host: Host | None = None
        if not sys.platform.startswith("linux") or nsenter() is None:
            raise OSError("overlay capture needs Linux and nsenter (util-linux)")
        self.lower = Path(os.path.realpath(lower))
        host = namespace_host(self.support.user_namespace)
        target = str(self.lower)
        with host.lock:
            host.settle()
            if target in host.mounted:
                raise OSError(f"an overlay is already mounted on {target}")
            host.mounted.add(target)
        try:
            parent = self.parent if self.parent is not None else _scratch_parent()
            self.base = Path(tempfile.mkdtemp(prefix="o-", dir=parent))
            self.upper = self.base / "upper"
            work = self.base / "work"
            self.upper.mkdir()
            work.mkdir()
            # the overlay's root takes its attributes from the upper dir: make them the
            # workspace root's, or the command would see a 0700 root
            st = os.stat(self.lower)
            os.chmod(self.upper, st.st_mode & 0o7777)
            if not as_user():
                os.chown(self.upper, st.st_uid, st.st_gid)
            opts = f"lowerdir={_escape(self.lower)},upperdir={_escape(self.upper)}"
            opts += f",workdir={_escape(work)},{_OPTIONS}"
            # index=on keeps hard links whole and marks copied-up files even when their
            # lower inode has other links (as root); userxattr refuses index=on and any
            # redirect_dir setting (it never creates redirects: a lower directory's
            # rename fails with EXDEV either way)
            opts += (
                ",userxattr,index=off"
                if self.support.user_namespace
                else ",redirect_dir=off,index=on"
            )
            if self.faults:
                maybe_fail("overlay.mount")
            host.request("mount", target, opts)
        except BaseException:
            with host.lock:
                host.mounted.discard(target)
            if hasattr(self, "base"):
                remove_tree(self.base)
            raise
        self._host = host

    def prefix(self, cwd: Path) -> list[str]:
        """The launcher that runs a command inside the overlay's namespace, in ``cwd``."""
        assert self._host is not None
        where = os.path.realpath(cwd)
        if where != str(self.lower):  # the mount left the helper in the root already
            self._host.request("chdir", where)
        return self._host.prefix(Path(where))

    def launcher(self, cwd: Path) -> list[str]:
        """The runner's spawn hook (``exec.runner.SpawnHook``): ``prefix``."""
        return self.prefix(cwd)

    def release(self, *, wait: bool = False) -> None:
        """Unmount and remove the scratch dirs (idempotent). Without ``wait`` the unmount
        completes in the helper while tidegate goes on (see ``Host.request``)."""
        host, self._host = self._host, None
        if host is None:
            return
        try:
            if not wait:
                host.request("umount", str(self.lower), then=self.base)
                return
            host.request("umount", str(self.lower))
        except OSError:
            # the helper is gone, and its namespace (the mount with it) once the last
            # command in it exits; the next overlay starts a new helper
            pass
        with host.lock:
            host.mounted.discard(str(self.lower))
        remove_tree(self.base)


def mounts_below(root: Path) -> list[str]:
    """Mount points strictly inside ``root`` (from ``/proc/self/mountinfo``)."""
    prefix = str(root).rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            for line in fh:
                fields = line.split(b" ")
                if len(fields) > 4:
                    point = _unescape(fields[4].decode("utf-8", "surrogateescape"))
                    if point.startswith(prefix):
                        found.append(point)
    except OSError:
        return []
    return found


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        text = text.replace(code, chr(int(code[1:], 8)))
    return text


@lru_cache(maxsize=1)
def _scratch_parent() -> Path:
    """This process's directory for overlay scratch dirs: creating and removing them in
    the shared temp dir contends for its lock with everything else there."""
    parent = Path(tempfile.mkdtemp(prefix="tidegate-overlays-"))
    atexit.register(shutil.rmtree, parent, True)
    return parent


def _escape(path: Path) -> str:
    """Overlay options are comma-separated and ':' separates lower layers."""
    text = str(path)
    if any(c in text for c in ",:\\\n"):
        raise OSError(f"path not usable in overlay options: {text!r}")
    return text
