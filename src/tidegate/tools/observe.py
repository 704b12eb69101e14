"""What a call changed, observed independently of its adapter: the workspace before and
after dispatch (the target path's state, an overlay capture or an exact inventory)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from tidegate.exec.sessions import SessionSupervisor
from tidegate.tools.adapters.base import ToolAdapter, ToolFailure
from tidegate.tools.catalog import ToolSpec
from tidegate.tools.context import ToolContext
from tidegate.tools.effects import DerivedMutation, EntryStateModel, WriteEffect


class Observation(msgspec.Struct):
    """The 'before' side of an independent capture."""

    target: str | None = None
    """The normalised target path (target_path capture)."""
    paths: dict[str, Any] = msgspec.field(default_factory=dict)
    """EntryState of the target and of each of its parent directories."""
    inventory: Any = None  # fingerprint.Inventory
    capture: Any = None  # capture.CommandCapture (command.run: overlay or exact inventory)
    kept: dict[str, bytes] = msgspec.field(default_factory=dict)
    """Bytes of files before the call, when the executor keeps them for undo."""
    method: str = ""
    """How the call's writes were observed (``target``, ``overlay``, ``inventory``...)."""

    @property
    def target_state(self) -> Any:
        return None if self.target is None else self.paths[self.target]


class Observer:
    """Observes the workspace around each dispatch, for one executor.

    While command sessions run, the last inventory is kept as the baseline of the next
    observation, so what a session wrote in between is not lost."""

    def __init__(
        self,
        context: ToolContext,
        sessions: SessionSupervisor,
        adapters: Mapping[str, ToolAdapter],
    ) -> None:
        self.context = context
        self.sessions = sessions
        self.adapters = adapters
        self._baseline: Any = None  # inventory kept while command sessions run
        self.last_capture: Any = None
        self.keep: Callable[[str], bytes | None] | None = None
        """Reads a file's bytes before it is changed, for undo (None: nothing kept)."""
        """How the last command.run's effects were captured (``capture.CaptureResult``:
        method, reason, changes), for reports and tests."""

    def before(self, spec: ToolSpec, target: str | None) -> Observation:
        if spec.capture == "target_path" and target is not None:
            from tidegate.workspace.confine.refusal import PathRefused, check_relative

            try:
                rel = _canonical(self.context.root, check_relative(target))
                paths = [str(rel), *(str(p) for p in rel.parents if str(p) != ".")]
                states = {p: self.context.workspace.state(p) for p in paths}
            except PathRefused as exc:
                raise ToolFailure("path_refused", str(exc), details={"reason": exc.reason}) from exc
            kept: dict[str, bytes] = {}
            if self.keep is not None and states[str(rel)].kind == "file":
                data = self.keep(str(rel))
                if data is not None:
                    kept[str(rel)] = data
            return Observation(target=str(rel), paths=states, kept=kept, method="target")
        if spec.capture == "inventory":
            from tidegate.tools.capture import CaptureUnavailable, CommandCapture
            from tidegate.workspace.fingerprint import take_inventory

            if self._baseline is not None:
                # a session ran since the last observation: start from that observation so
                # what it wrote in between is not lost
                return Observation(inventory=self._baseline)
            try:
                if self._overlay_capturable(spec) and not self.sessions.any_running:
                    try:
                        return Observation(capture=CommandCapture.start(self.context.root))
                    except CaptureUnavailable as exc:  # required and unusable: nothing ran
                        raise ToolFailure("capture_unavailable", str(exc), retryable=False) from exc
                return Observation(
                    inventory=take_inventory(
                        self.context.root, exact=True, view=self.context.git_view
                    )
                )
            except OSError as exc:
                raise ToolFailure(
                    "capture_failed",
                    f"the workspace could not be inventoried: {exc}",
                    retryable=False,
                ) from exc
        return Observation()

    def running(self, before: Observation) -> AbstractContextManager[None]:
        """What the commit lock does while the call runs (the executor holds it from the
        before observation to the after one). A command in an overlay lets it go: its
        writes land in its own upper layer, so other agents' writes meanwhile (8 MCP
        servers on one repository) cannot be taken for its own, and its effects reach the
        workspace only at the merge, made under the lock again. Every other observation
        (a target path, an inventory) keeps it: what lands in between would be counted."""
        capture = before.capture
        if capture is not None and capture.method == "overlay":
            return self.context.workspace.yielded()
        return contextlib.nullcontext()

    def _overlay_capturable(self, spec: ToolSpec) -> bool:
        """Only the host's own command.run adapter writes nothing but through the command
        it spawns (with the capture's hook); any other adapter could write the workspace
        itself, past an overlay, so its effects come from inventories."""
        from tidegate.tools.adapters.command import CommandRun

        adapter = self.adapters[spec.tool_id]
        return type(adapter) is CommandRun and adapter.label is None

    def after(self, before: Observation) -> tuple[list[WriteEffect], list[DerivedMutation]]:
        if before.target is not None:
            writes = []
            # parents first (shallowest first), then the target: the order they changed in
            for path in sorted(before.paths, key=lambda p: (p.count("/"), p)):
                after = self.context.workspace.state(path)
                if after != before.paths[path]:
                    self._patch_baseline(path, after)
                    writes.append(_write(path, before.paths[path], after))
            return writes, []
        if before.capture is not None:
            captured = self.last_capture = before.capture.finish(self.keep)
            before.kept.update(captured.before_bytes)
            before.method = captured.method
            self._note_changed(c.path for c in captured.changes)
            writes = [_write(c.path, c.before, c.after, c.before_mode, c.after_mode)
                      for c in captured.changes]  # fmt: skip
            derived = [DerivedMutation(path=d.path, before=d.before, after=d.after)
                       for d in captured.derived]  # fmt: skip
            return writes, derived
        if before.inventory is not None:
            from tidegate.workspace.fingerprint import diff_inventory, take_inventory

            after_inv = take_inventory(
                self.context.root, previous=before.inventory, exact=True, view=self.context.git_view
            )
            changes, derived_dirs = diff_inventory(before.inventory, after_inv)
            before.method = "inventory"
            self._note_changed(c.path for c in changes)
            self._baseline = after_inv if self.sessions.any_running else None
            writes = [_write(c.path, c.before, c.after, c.before_mode, c.after_mode)
                      for c in changes]  # fmt: skip
            derived = [
                DerivedMutation(
                    path=d,
                    before=before.inventory.derived.get(d),
                    after=after_inv.derived.get(d),
                )
                for d in derived_dirs
            ]
            return writes, derived
        return [], []

    def _note_changed(self, paths: Iterable[str]) -> None:
        """Tell the contained commands' secret mask which paths a command changed: their
        directories are listed again before the next command (it is exact without it)."""
        self.context.workspace.secrets.note_changed(self.context.root, list(paths))

    def _patch_baseline(self, path: str, state: Any) -> None:
        """Keep a running session's baseline in step with writes other tools made."""
        if self._baseline is None:
            return
        entries = dict(self._baseline.entries)
        modes = dict(self._baseline.modes)
        if state.kind == "missing":
            entries.pop(path, None)
        else:
            entries[path] = state
        modes.pop(path, None)
        if state.kind in ("file", "dir"):  # exact inventories record their permission bits
            import os
            import stat

            modes[path] = stat.S_IMODE(os.lstat(self.context.root / path).st_mode)
        self._baseline = msgspec.structs.replace(self._baseline, entries=entries, modes=modes)


def _canonical(root: Path, rel: PurePosixPath) -> PurePosixPath:
    """``rel`` with symlinked directories inside the root resolved, as the port names the
    paths it changes; the lexical form when a parent does not exist yet."""
    from tidegate.workspace.confine import RootHandle

    with RootHandle(root) as handle:
        try:
            where = handle.resolve(rel)
        except (FileNotFoundError, NotADirectoryError):
            return rel
        where.close()
        return where.rel


def _write(
    path: str,
    before: Any,
    after: Any,
    before_mode: int | None = None,
    after_mode: int | None = None,
) -> WriteEffect:
    return WriteEffect(
        path=path,
        before=EntryStateModel(kind=before.kind, sha256=before.sha256, mode=_octal(before_mode)),
        after=EntryStateModel(kind=after.kind, sha256=after.sha256, mode=_octal(after_mode)),
    )


def _octal(mode: int | None) -> str | None:
    return None if mode is None else f"{mode:04o}"
