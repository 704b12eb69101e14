"""The helper process that holds the mount namespace overlays are mounted in, one per
tidegate process (see the ``tidegate.exec.overlay`` doc), and the reaper of unmounted
overlays' scratch dirs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

from tidegate.exec.trees import remove_later, remove_tree

HOST_TIMEOUT_S = 10.0

_HOST_CODE = r"""
import ctypes, os, sys
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
    op, target, options = line.rstrip("\n").split(" ")  # the op, then two paths in hex
    target, options = bytes.fromhex(target), bytes.fromhex(options)
    try:
        if op == "mount":
            ok = libc.mount(b"overlay", target, b"overlay", 0, options) == 0
            if ok:
                os.chdir(target)  # the usual cwd, entered through the overlay
        elif op == "chdir":
            os.chdir(target)
            ok = True
        else:
            os.chdir("/")
            # EINVAL/ENOENT: nothing is mounted there (any more): what an unmount wants
            ok = libc.umount2(target, 2) == 0 or ctypes.get_errno() in (2, 22)
    except OSError as exc:
        print("err " + op + ": " + str(exc), flush=True)
        continue
    print("ok" if ok else err(op), flush=True)
"""


def as_user() -> bool:
    return os.geteuid() != 0


class Host:
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
            self.settle()
            if self.proc.poll() is not None or self.proc.stdin is None:
                raise OSError("overlay namespace helper is gone")
            # hex: any byte of a path (a space, a newline) passes, and the helper needs no
            # parser (json alone doubled its start)
            fields = (os.fsencode(target).hex(), os.fsencode(options).hex())
            self.proc.stdin.write(f"{op} {fields[0]} {fields[1]}\n")
            self.proc.stdin.flush()
            if then is not None:
                self.pending.append((target, then))
                return
            answer = self._answer()
        if answer != "ok":
            raise OSError(f"overlay {op} of {target}: {answer}")

    def settle(self) -> None:
        """Read the answers of unmounts sent without waiting; a failed one breaks the
        helper (a stale mount must not be stacked on)."""
        while self.pending:
            target, base = self.pending.pop(0)
            answer = self._answer()
            self.mounted.discard(target)
            remove_later(base)  # rmdir of overlay work dirs costs ms each: not on the path
            if answer != "ok":
                self.close()
                raise OSError(f"overlay umount of {target}: {answer}")

    def prefix(self, cwd: Path) -> list[str]:
        """``nsenter`` into the namespace, in ``cwd`` as the helper resolved it there.

        ``--wd=PATH`` would open PATH before entering (the real directory under the
        overlay); so the helper has entered ``cwd`` itself (``Overlay.prefix``), and
        ``--wd`` takes its cwd."""
        argv = [nsenter() or "nsenter", f"--target={self.proc.pid}"]
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


_hosts: dict[bool, Host] = {}
_hosts_lock = threading.Lock()


def namespace_host(user: bool) -> Host:
    """The process's helper (started on first use, restarted if it died)."""
    with _hosts_lock:
        found = _hosts.get(user)
        if found is None or found.proc.poll() is not None:
            if found is not None:
                found.close()
            found = _hosts[user] = Host(user)
        return found


@lru_cache(maxsize=1)
def nsenter() -> str | None:
    return shutil.which("nsenter")
