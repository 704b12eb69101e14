"""The guarded runs of ``tidegate acp`` execute on the main thread, where Ctrl-C lands.

The engine already knows how to stop a run halfway: Ctrl-C raises ``KeyboardInterrupt``
on the main thread, the runner kills the running command's whole process group on the way
out (``exec.supervise``), the model call is abandoned with its socket, phases that write
the work tree hold the interrupt until they are done (``flow.pipeline.deferred_interrupts``)
and the run pauses at its last checkpoint (``flow.driver``). ``session/cancel`` reuses
exactly that: the protocol runs on a thread of its own, the runs on the main thread, and
cancelling the run in progress is a SIGINT sent to the main thread alone
(``signal.pthread_kill``), so a blocking wait (a command's output, a model's answer) is
interrupted as a terminal's Ctrl-C would interrupt it. There is no second stop path.
SIGTERM (an editor stopping its agent) pauses the run in progress the same way, as it does
for ``tidegate run``, and then ends the server.
"""

from __future__ import annotations

import concurrent.futures
import queue
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

Job = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class Foreground:
    """Runs one job at a time on the main thread for the protocol's thread. ``interrupt``
    is a Ctrl-C for the job that is running, and for nothing else."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._current: concurrent.futures.Future[Any] | None = None
        self._asked = False
        """An interrupt was sent: a SIGINT arriving once no job runs is its late echo."""
        self._stopping: concurrent.futures.Future[Any] | None = None
        """The job an interrupt was sent to: a second cancel sends no second Ctrl-C."""
        self._main = threading.main_thread().ident

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return future

    def interrupt(self, future: concurrent.futures.Future[Any]) -> bool:
        """Stop ``future``'s job: not started yet, it never starts; running, it gets a
        Ctrl-C. False when it had already finished."""
        if future.cancel():
            return True
        with self._lock:
            if self._current is not future or self._main is None:
                return False
            if self._stopping is future:
                return True
            self._asked, self._stopping = True, future
            signal.pthread_kill(self._main, signal.SIGINT)
        return True

    def close(self) -> None:
        """``work`` returns once the jobs before this call are done."""
        self._jobs.put(None)

    def work(self) -> None:
        """On the main thread: run the submitted jobs in order until ``close``."""
        assert threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            while (job := self._jobs.get()) is not None:
                self._run(*job)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _run(self, fn: Callable[[], Any], future: concurrent.futures.Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        result: Any = None
        error: BaseException | None = None
        with self._lock:
            self._current = future
        try:
            try:
                result = fn()
            finally:
                self._current = None  # from here on a late SIGINT is ignored
        except BaseException as exc:  # handed to the protocol's thread
            error = exc
            if isinstance(exc, KeyboardInterrupt):
                # One that came just after the job returned does not undo its result; one
                # the job did not handle is its error, never a KeyboardInterrupt in the loop.
                error = None if result is not None else RuntimeError("the run was interrupted")
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGTERM:
            self._jobs.put(None)  # (reentrant) ``work`` ends once the job in progress is over
        if self._current is not None:
            raise KeyboardInterrupt
        if signum == signal.SIGINT:
            if self._asked:
                self._asked = False  # the cancel of a job that had just ended
                return
            raise KeyboardInterrupt  # the user's own Ctrl-C on an idle server ends it
