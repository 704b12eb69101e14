"""A run's head start: its first git work, begun while the interpreter imports the engine.

Importing the engine (pydantic models, typer, the phases) takes longer than finding the
repository, registering the run (its own lock) and scanning the work tree for T0, and the two need
different things: the imports a core of Python, the scan git processes. So once a run's
command line is parsed (``tidegate.cli.runcmd``), ``begin`` starts a thread that
does that git work, and ``execute`` adopts what it made (``adopt``) instead of doing it
again. Nothing the thread does is visible before a run is decided: the registration (released on
any way out), a preparation slot (``workspace.prep_slots``, given back on any way out), a
claimed scratch directory (removed on any way out, swept by ``recover``
after a kill), T0's trees as objects without a ref, and the warm shadow cleaned to its own
HEAD (which every pooled run does first). It changes no ref, no index and no file of the
user's; it writes ``.git/info/exclude`` never (it runs only when that already excludes
``.tidegate/``, else the run does it as before).

Whatever goes wrong in the thread (not a repository, a git error) is not
reported by it: the head start is dropped and the run does the same work itself, so every
error is reported exactly as without a head start. A head start for another path than
the request's is dropped too. A command line that goes to typer gets no head start.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from tidegate.workspace import landed
from tidegate.workspace.claims import release as release_claim
from tidegate.workspace.journal import pending_journals
from tidegate.workspace.lock import RunLock
from tidegate.workspace.prep_slots import PrepSlot, take_for
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow import PoolCleaning
from tidegate.workspace.shadow.leftovers import make_scratch
from tidegate.workspace.snapshot import T0Trees, excluded_already, snapshot_trees

SWITCH_INTERVAL_S = 0.0002
_pending: HeadStart | None = None
_adopted: HeadStart | None = None
Probes = Literal["overlay", "bubblewrap"] | None
_guard = threading.Lock()


def new_run_id() -> str:
    # os.urandom, not secrets: the same bytes, without importing hmac and random first
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


class HeadStart:
    """The thread's work and what it made (``trees`` set: all of it is there)."""

    def __init__(self, repo_arg: Path, warm: bool, probe: Probes) -> None:
        self.repo_arg = repo_arg
        self.warm = warm
        self.probe = probe
        self.probes: threading.Thread | None = None
        self.repo: Repository | None = None
        self.discovered = threading.Event()
        self.run_id = new_run_id()
        self.lock: RunLock | None = None
        self.slot: PrepSlot | None = None
        self.stopped = threading.Event()
        """Set by ``drop``: a wait for a preparation slot ends, and nothing more is begun."""
        self.scratch: Path | None = None
        self.cleaning: PoolCleaning | None = None
        self.trees: T0Trees | None = None
        self.landed_seen = 0
        self._thread = threading.Thread(target=self._work, name="tidegate-headstart", daemon=True)

    def _work(self) -> None:
        try:
            try:
                self.repo = repo = discover(self.repo_arg)
            finally:
                self.discovered.set()
            if pending_journals(repo.runtime_dir) or not excluded_already(repo):
                return  # the run refuses, or writes the exclusion first: its own way
            lock = RunLock(repo.runtime_dir, self.run_id)
            lock.acquire()
            self.lock = lock
            self.slot = take_for(lock, repo.runtime_dir, self.stopped)
            if self.stopped.is_set():
                return  # dropped (Ctrl-C, a refused command line) while it waited
            self.scratch = make_scratch(repo, self.run_id)
            if self.warm:
                self.cleaning = PoolCleaning.start(repo)
            self.landed_seen = landed.count(repo.runtime_dir)  # before T0's scan
            self.trees = snapshot_trees(repo, self.scratch)
        except Exception:
            self.trees = None
        finally:
            if self.probe is not None and not self.stopped.is_set():
                # After the scan, not beside it: on the core the scan no longer needs,
                # while the run's first phases wait on git, and before VERIFY needs them.
                self.probes = threading.Thread(
                    target=self._probe, name="tidegate-probes", daemon=True
                )
                self.probes.start()

    def _probe(self) -> None:
        """The probes VERIFY needs, cached for the process (VERIFY's own calls then wait
        for these answers): the overlay it writes into and, unless containment is off,
        bubblewrap."""
        try:
            from tidegate.exec.overlay.probe import probe as overlay_probe

            overlay_probe()
            if self.probe == "bubblewrap":
                from tidegate.exec.containment import probe

                probe()
        except Exception:  # VERIFY probes again, and says what failed
            pass

    def wait(self) -> None:
        """Until the thread is done (the shadow's cleaning may still be going on)."""
        self._thread.join()

    def settle(self) -> None:
        """Until the probes are done too: no thread of the head start is left."""
        self.wait()
        if self.probes is not None:
            self.probes.join()

    def drop(self) -> None:
        """Undo the head start: no git of it still running, lock, scratch and claim gone.
        The pooled shadow, cleaned or not, stays the pool's (a run cleans it first)."""
        self.stopped.set()
        self.settle()
        if self.slot is not None:
            self.slot.release()
        if self.cleaning is not None:
            self.cleaning.release()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self.repo is not None:
            release_claim(self.repo, self.run_id)
        if self.lock is not None:
            self.lock.release()


def begin(repo: Path, *, warm: bool, probe: Probes) -> None:
    """Start the head start of a run in ``repo`` (the parsed ``--repo``): ``warm`` cleans the
    pooled shadow too; ``probe``: what VERIFY will need probed, the overlay alone
    (``--containment none``), bubblewrap too, or nothing (no ``--verify``)."""
    global _pending
    with _guard:
        if _pending is not None:
            return
        # The thread mostly waits on git, then needs the interpreter for a moment between
        # two git calls, while the main thread imports. At the default 5 ms switch
        # interval each such moment waits up to 5 ms for the importing thread to yield,
        # and the scan (the critical path) started ~45 ms late; 0.2 ms hands over quickly
        # and costs nothing when only one thread wants the interpreter.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        _pending = HeadStart(repo, warm=warm, probe=probe)
        _pending._thread.start()


def repository(repo_path: Path) -> Repository | None:
    """The repository the pending head start found for ``repo_path`` (waiting for its
    discovery only), or None: the caller discovers it itself."""
    with _guard:
        head = _pending
    if head is None or not _same(head.repo_arg, repo_path):
        return None
    head.discovered.wait()
    return head.repo


def settle() -> None:
    """Until the adopted head start's probes are done (before the process exits)."""
    with _guard:
        head = _adopted
    if head is not None:
        head.settle()


def adopt(repo_path: Path) -> HeadStart | None:
    """The head start for a run in ``repo_path``, complete, or None (none was begun, it
    failed, or it was for another path: then it is dropped)."""
    global _pending, _adopted
    with _guard:
        head, _pending = _pending, None
        _adopted = head
    if head is None:
        return None
    head.wait()
    if head.trees is None or not _same(head.repo_arg, repo_path):
        head.drop()
        return None
    return head


def discard() -> None:
    """Drop a head start nobody adopted (the command line was refused, or ran no run), and
    wait for the probes of the one adopted."""
    global _pending
    with _guard:
        head, _pending = _pending, None
    if head is not None:
        head.drop()
    settle()


def _same(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return False
