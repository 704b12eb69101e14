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

The namespace is held by one small helper process per tidegate process (``_Host``: a
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
import contextlib
import json
import os
import queue
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tidegate.disk.faults import maybe_fail
from tidegate.exec.trees import remove_tree

_OPTIONS = "metacopy=off,volatile"
_HOST_TIMEOUT_S = 10.0

_HOST_CODE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
def err(what):
    return "err " + what + ": " + os.strerror(ctypes.get_errno())
def setup(user):
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x20000 | (0x10000000 if user else 0)) != 0:
        return err("unshare")
    if user:
        for path, data in (("/proc/self/setgroups", "deny"),
                           ("/proc/self/uid_map", "%d %d 1\n" % (uid, uid)),
                           ("/proc/self/gid_map", "%d %d 1\n" % (gid, gid))):
            with open(path, "w") as fh:
                fh.write(data)
    if libc.mount(b"none", b"/", None, 16384 | (1 << 19), None) != 0:
        return err("mount --make-rslave /")
    return "ok"
print(setup(sys.argv[1] == "user"), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    target = os.fsencode(req["target"])
    try:
        if req["op"] == "mount":
            ok = libc.mount(b"overlay", target, b"overlay", 0, os.fsencode(req["options"])) == 0
            if ok:
                os.chdir(target)  # the usual cwd, entered through the overlay
        elif req["op"] == "chdir":
            os.chdir(target)
            ok = True
        else:
            os.chdir("/")
            # EINVAL/ENOENT: nothing is mounted there (any more): what an unmount wants
            ok = libc.umount2(target, 2) == 0 or ctypes.get_errno() in (2, 22)
    except OSError as exc:
        print("err " + req["op"] + ": " + str(exc), flush=True)
        continue
    print("ok" if ok else err(req["op"]), flush=True)
"""


@dataclass(frozen=True)
class OverlaySupport:
    """Whether per-command overlays work here, and how (``xattr_prefix``: where overlayfs
    keeps its marks in the upper layer, ``trusted.overlay.`` as root, ``user.overlay.``
    in a user namespace)."""

    available: bool
    reason: str
    user_namespace: bool = False
    xattr_prefix: str = "trusted.overlay."


def _as_user() -> bool:
    return os.geteuid() != 0


class _Host:
    """The helper process that holds the mount namespace commands run in."""

    def __init__(self, user: bool) -> None:
        self.user = user
        self.lock = threading.Lock()
        self.mounted: set[str] = set()
        self.pending: list[tuple[str, Path]] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _HOST_CODE, "user" if user else "root"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        first = self._answer()
        if first != "ok":
            self.close()
            raise OSError(f"overlay namespace helper: {first}")

    def _answer(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return line.strip() or f"exited with {self.proc.poll()}"

    def request(self, op: str, target: str, options: str = "", *, then: Path | None = None) -> None:
        """Send one request. ``then``: do not wait -- the answer is read before the next
        request, and the directory ``then`` removed once it came (an unmount: its
        teardown is the helper's, off the command's path)."""
        with self.lock:
            self._settle()
            if self.proc.poll() is not None or self.proc.stdin is None:
                raise OSError("overlay namespace helper is gone")
            self.proc.stdin.write(json.dumps({"op": op, "target": target, "options": options}))
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            if then is not None:
                self.pending.append((target, then))
                return
            answer = self._answer()
        if answer != "ok":
            raise OSError(f"overlay {op} of {target}: {answer}")

    def _settle(self) -> None:
        """Read the answers of unmounts sent without waiting; a failed one breaks the
        helper (a stale mount must not be stacked on)."""
        while self.pending:
            target, base = self.pending.pop(0)
            answer = self._answer()
            self.mounted.discard(target)
            _reaper().put(base)  # rmdir of overlay work dirs costs ms each: not on the path
            if answer != "ok":
                self.close()
                raise OSError(f"overlay umount of {target}: {answer}")

    def prefix(self, cwd: Path) -> list[str]:
        """``nsenter`` into the namespace, in ``cwd`` as the helper resolved it there.

        ``--wd=PATH`` would open PATH before entering (the real directory under the
        overlay); so the helper has entered ``cwd`` itself (``Overlay.prefix``), and
        ``--wd`` takes its cwd."""
        argv = [_nsenter() or "nsenter", f"--target={self.proc.pid}"]
        if self.user:
            argv += ["--user", "--preserve-credentials"]
        return [*argv, "--mount", "--wd", "--"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        for _target, base in self.pending:
            remove_tree(base)
        self.pending.clear()


_hosts: dict[bool, _Host] = {}
_hosts_lock = threading.Lock()


def _host(user: bool) -> _Host:
    """The process's helper (started on first use, restarted if it died)."""
    with _hosts_lock:
        found = _hosts.get(user)
        if found is None or found.proc.poll() is not None:
            if found is not None:
                found.close()
            found = _hosts[user] = _Host(user)
        return found


@lru_cache(maxsize=1)
def _nsenter() -> str | None:
    return shutil.which("nsenter")


@dataclass
class Overlay:
    """One command's overlay: ``upper`` collects what it writes below ``lower``.

    Creating it mounts the overlay (OSError when it cannot); ``prefix(cwd)`` goes in front
    of the command's argv; ``release()`` unmounts it and removes the scratch dirs once the
    upper layer has been merged. One overlay per ``lower`` at a time.
    """

    lower: Path
    support: OverlaySupport
    faults: bool = True
    """Whether the ``overlay.mount`` fault point applies (not to the probe)."""
    parent: Path | None = None
    """Where its scratch dirs go (a run's claimed scratch dir, swept after a kill);
    default: this process's own directory under the OS temp dir."""
    base: Path = field(init=False)
    upper: Path = field(init=False)
    _host: _Host | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not sys.platform.startswith("linux") or _nsenter() is None:
            raise OSError("overlay capture needs Linux and nsenter (util-linux)")
        self.lower = Path(os.path.realpath(self.lower))
        host = _host(self.support.user_namespace)
        target = str(self.lower)
        with host.lock:
            host._settle()
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
            if not _as_user():
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
        completes in the helper while tidegate goes on (see ``_Host.request``)."""
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


@lru_cache(maxsize=1)
def _reaper() -> queue.SimpleQueue[Path]:
    """One background thread removing unmounted overlays' scratch dirs, in order."""
    work: queue.SimpleQueue[Path] = queue.SimpleQueue()

    def loop() -> None:
        while True:
            remove_tree(work.get())

    threading.Thread(target=loop, name="tidegate-overlay-reaper", daemon=True).start()
    return work


def _escape(path: Path) -> str:
    """Overlay options are comma-separated and ':' separates lower layers."""
    text = str(path)
    if any(c in text for c in ",:\\\n"):
        raise OSError(f"path not usable in overlay options: {text!r}")
    return text


# -- the probe -----------------------------------------------------------------------------

_PROBE_COMMAND = "echo new > created && echo changed > kept && rm gone && mkdir dir"


def probe() -> OverlaySupport:
    """Whether a per-command overlay works here: mounted, written through, and read back
    as expected (a new file, a copied-up file, a whiteout). Once per process (a caller
    arriving while another thread probes waits for its answer); a failure is tried once
    more (a helper killed or starved at the wrong moment is not a verdict on the host)."""
    with _probe_lock:
        return _probe()


_probe_lock = threading.Lock()


@lru_cache(maxsize=1)
def _probe() -> OverlaySupport:
    found = _probe_once()
    return found if found.available else _probe_once()


def _probe_once() -> OverlaySupport:
    as_user = _as_user()
    support = OverlaySupport(
        True,
        "overlayfs in tidegate's mount namespace" + (" inside a user namespace" if as_user else ""),
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
            overlay = Overlay(lower, support, faults=False, parent=scratch)
        except OSError as exc:
            return OverlaySupport(False, f"overlay capture unavailable: {exc}")
        try:
            done = subprocess.run(
                [*overlay.prefix(lower), "/bin/sh", "-c", _PROBE_COMMAND],
                capture_output=True,
                timeout=_HOST_TIMEOUT_S,
                check=False,
            )
            failed = _probe_failures(lower, overlay.upper, done.returncode)
            if failed:
                why = done.stderr.decode("utf-8", "replace").strip()[:200]
                return OverlaySupport(
                    False, f"overlay capture unavailable: {failed[0]} {why}".strip()
                )
            return support
        except (OSError, subprocess.SubprocessError) as exc:
            return OverlaySupport(False, f"overlay capture unavailable: {exc}")
        finally:
            with contextlib.suppress(OSError):
                overlay.release(wait=True)
    finally:
        remove_tree(scratch)


def _probe_failures(lower: Path, upper: Path, code: int) -> list[str]:
    checks = {
        "the probe command failed": code == 0,
        "the lower layer was written": (lower / "kept").read_text() == "old\n"
        and (lower / "gone").exists(),
        "no new file in the upper layer": (upper / "created").is_file(),
        "no copied-up file in the upper layer": (upper / "kept").is_file(),
        "no whiteout for a deletion": _is_whiteout(upper / "gone"),
    }
    return [what for what, ok in checks.items() if not ok]


def _is_whiteout(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0
