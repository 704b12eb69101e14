"""Conformance 13 (race): a directory swapped for a symlink to the outside, thousands of
times, while the port reads, writes, edits, lists and searches through it, never lets an
operation read outside content or write outside the root.

A background thread runs a rename dance inside the workspace: ``d`` (a real directory) is
renamed away and a prepared symlink ``.parked_link -> <outside>`` is renamed to ``d``, then
both are put back. Every rename is atomic, so at any instant ``d`` is a real directory, a
symlink out, or missing. The main thread keeps operating on paths below ``d``. Each
operation may succeed (it met the real directory) or be refused (it met the link, or
nothing); what it may never do is return outside bytes or change the outside tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidegate.errors import TidegateError
from tidegate.workspace.port import MUST_NOT_EXIST, PathRefused, WorkspacePort
from tidegate.workspace.states import EntryState

SECRET = "OUTSIDE-SECRET-c0ffee"
ROUNDS = 5000
TIME_CAP_S = 30.0
MIN_CAUGHT = 20  # swapped-in symlinks caught: proof the race was really run


def tree_digest(base: Path) -> str:
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(base)):
        dirnames.sort()
        for name in sorted(filenames + dirnames):
            full = Path(dirpath) / name
            digest.update(f"{full.relative_to(base)}:{full.lstat().st_mode:o}\n".encode())
            if full.is_file() and not full.is_symlink():
                digest.update(full.read_bytes())
    return digest.hexdigest()


class Swapper(threading.Thread):
    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.cycles = 0
        self.error: BaseException | None = None
        self.rng = random.Random(13)

    def run(self) -> None:
        d, real, link = self.root / "d", self.root / ".parked_real", self.root / ".parked_link"
        try:
            while not self.stop.is_set():
                os.rename(d, real)  # d: missing
                self._place(link, d)  # d: symlink to the outside
                os.rename(d, link)  # d: missing
                self._place(real, d)  # d: the real directory again
                self.cycles += 1
                if self.rng.random() < 0.3:  # sometimes let d stay real for a while
                    time.sleep(self.rng.random() * 0.0002)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _place(self, src: Path, dst: Path) -> None:
        """Rename ``src`` to ``dst``; a create may have made a fresh ``dst`` directory
        while it was missing: park that one and try again."""
        for _ in range(100):
            try:
                os.rename(src, dst)
                return
            except OSError:
                with contextlib.suppress(FileNotFoundError):
                    os.rename(dst, self.root / f".stray-{self.cycles}-{time.monotonic_ns()}")
        os.rename(src, dst)


@pytest.fixture
def race_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when there is one: the race is about name resolution, and
    tmpfs keeps the thousands of fsyncs of committed writes from dominating the run."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="tidegate-race-") as scratch:
            yield Path(scratch)
    else:
        yield tmp_path


def test_symlink_swap_race_never_escapes(race_dir: Path) -> None:
    root = race_dir / "ws"
    outside = race_dir / "outside"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside 0\n")
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET} file\n")
    (outside / f"{SECRET}.txt").write_text(f"{SECRET} named\n")
    os.symlink(str(outside), root / ".parked_link")
    outside_before = tree_digest(outside)

    port = WorkspacePort(root)
    swapper = Swapper(root)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # interleave the two threads finely
    counts = {"ok": 0, "refused": 0, "escaped_refusal": 0}
    ok_by_op = [0] * 6
    rounds = 0
    swapper.start()
    started = time.monotonic()
    try:
        while (rounds < ROUNDS or counts["escaped_refusal"] < MIN_CAUGHT) and (
            time.monotonic() - started < TIME_CAP_S
        ):
            rounds += 1
            op = rounds % 6
            try:
                if op == 0:
                    result = port.read("d/f.txt")
                    assert SECRET not in result.content
                    assert result.content.startswith("inside")
                elif op == 1:
                    state = port.state("d/f.txt")
                    assert state.kind in ("file", "missing")
                elif op == 2:
                    listing = port.list("d", depth=2)
                    assert not any(SECRET in e.path for e in listing.entries)
                elif op == 3:
                    found = port.grep(SECRET, path="d")
                    assert found.matches == []
                elif op == 4:
                    current = port.read("d/f.txt")
                    port.edit(
                        "d/f.txt",
                        old=current.content,
                        new=f"inside {rounds}\n",
                        expect=current.sha256,
                    )
                else:
                    # Create and delete in turn, so the directory stays small.
                    state = port.state("d/new.txt")
                    if state.kind == "file":
                        assert state == EntryState.file(b"created\n")
                        port.delete("d/new.txt", expect=state.sha256 or "")
                    else:
                        port.write("d/new.txt", "created\n", expect=MUST_NOT_EXIST)
                counts["ok"] += 1
                ok_by_op[op] += 1
            except PathRefused as exc:
                counts["refused"] += 1
                counts["escaped_refusal"] += exc.reason == "symlink_escape"
            except TidegateError:
                counts["refused"] += 1  # missing, stale or not-a-directory mid-swap
    finally:
        swapper.stop.set()
        swapper.join(timeout=10)
        sys.setswitchinterval(old_interval)
    elapsed = time.monotonic() - started
    print(
        f"\nswap race: {rounds} rounds, {swapper.cycles} swap cycles in {elapsed:.1f}s; "
        f"{counts}, successes by operation {ok_by_op}"
    )

    assert swapper.error is None, swapper.error
    assert tree_digest(outside) == outside_before
    assert rounds >= ROUNDS, f"only {rounds} rounds in {TIME_CAP_S}s"
    # The race was really exercised: both outcomes occurred, and some refusals were the
    # swapped-in symlink being caught.
    assert counts["escaped_refusal"] >= MIN_CAUGHT
    assert all(n > 0 for n in ok_by_op), ok_by_op
    assert swapper.cycles > 100
    # Everything created landed inside the workspace.
    created = list(root.rglob("new.txt"))
    assert all(p.read_text() == "created\n" for p in created)
    assert not list(outside.rglob("new.txt"))
