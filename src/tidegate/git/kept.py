"""Long-lived git processes spoken to one request at a time: the object reader
(``cat-file --batch-command``) and the ref writer (``update-ref --stdin``)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from tidegate.errors import GitError

_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_PLAIN_REF = re.compile(r"refs/[A-Za-z0-9._/-]+")


class _Kept:
    """A long-lived git process spoken to one request at a time (a request, then its
    answer: nothing waits on a full pipe), under a lock."""

    def __init__(self, argv: list[str], cwd: Path | None, env: Mapping[str, str]) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None
        try:
            self._proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                process_group=0,
            )
        except OSError:
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


class _BatchReader(_Kept):
    """``git cat-file --batch-command`` (git 2.36; an older git's process ends at once, and
    every read goes the one-shot way). ``read`` and ``sizes`` give None, and the caller
    runs git once as usual, for a name that is not a full object id or once the process
    is gone; a missing object is a GitError, as from a one-shot ``cat-file``."""

    def sizes(self, oids: Sequence[str]) -> dict[str, int] | None:
        """``oids``' sizes (``info``: the header alone, whatever the object's size)."""
        got = self._ask(b"info", oids, None)
        return None if got is None else {oid: size for oid, (size, _data) in got.items()}

    def read(self, oids: Sequence[str], only: bytes | None = None) -> dict[str, bytes] | None:
        """``oids``' contents; None (the caller asks git once) also when ``only`` names an
        object type and an object is of another."""
        got = self._ask(b"contents", oids, only)
        return None if got is None else {oid: data for oid, (_size, data) in got.items()}

    def _ask(
        self, command: bytes, oids: Sequence[str], only: bytes | None
    ) -> dict[str, tuple[int, bytes]] | None:
        """``command`` (``info``, ``contents``) for each of ``oids``: size and content."""
        if not all(_OBJECT_ID.fullmatch(oid) for oid in oids):
            return None
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdout is None:
                return None
            out: dict[str, tuple[int, bytes]] = {}
            try:
                for oid in oids:
                    proc.stdin.write(command + b" " + oid.encode() + b"\n")
                    proc.stdin.flush()
                    header = proc.stdout.readline()
                    fields = header.split()
                    if len(fields) != 3:
                        if header.endswith((b" missing\n", b" ambiguous\n")):
                            raise GitError(
                                ["cat-file", command.decode()], 0, header.decode().strip()
                            )
                        raise OSError(f"cat-file said {header[:80]!r}")
                    size, data = int(fields[2]), b""
                    if command == b"contents":
                        data = proc.stdout.read(size + 1)
                        if len(data) != size + 1:
                            raise OSError("cat-file ended mid-object")
                    if only is not None and fields[1] != only:
                        return None  # the process is in step: the answer was read whole
                    out[oid] = (size, data[:size])
            except GitError:
                raise  # an answer like any other: the process goes on
            except (OSError, ValueError):
                self._stop()
                return None
            except BaseException:  # interrupted mid-answer: what is left would be misread
                self._stop()
                raise
            return out


class _RefWriter(_Kept):
    """``git update-ref --stdin``, one transaction per update (``start``, ``update``,
    ``commit``: the ref is written when ``commit: ok`` comes back). ``update`` gives
    False, and the caller runs ``update-ref`` once as usual (which reports any error in
    git's words; an unconditional update is safe to repeat), for a ref name this
    protocol cannot carry, an object that is not a full id, or any trouble: git ends the
    process on a refused update."""

    def update(self, ref: str, oid: str) -> bool:
        return self.transaction([("update", ref, oid)])

    def transaction(self, commands: Sequence[tuple[str, str, str]]) -> bool:
        """``(verb, ref, oid)`` commands (``update``, ``create``) in one transaction."""
        if not all(
            verb in ("update", "create") and _OBJECT_ID.fullmatch(oid) and _PLAIN_REF.fullmatch(ref)
            for verb, ref, oid in commands
        ):
            return False
        lines = "".join(f"{verb} {ref} {oid}\n" for verb, ref, oid in commands)
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdout is None:
                return False
            try:
                proc.stdin.write(f"start\n{lines}commit\n".encode())
                proc.stdin.flush()
                answers = (proc.stdout.readline(), proc.stdout.readline())
            except OSError:
                self._stop()
                return False
            except BaseException:  # interrupted mid-answer: what is left would be misread
                self._stop()
                raise
            if answers != (b"start: ok\n", b"commit: ok\n"):
                self._stop()
                return False
            return True
