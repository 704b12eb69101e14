"""What one command changed in the workspace, attested by the host in O(what changed).

Two methods, one result (typed, hashed, moded changes plus derived-directory mutations):

``overlay`` (the fast path)
    The command runs with an overlay on the workspace path (``exec/overlay/``): it sees
    and writes the workspace as usual, but every write lands in a fresh upper directory.
    Afterwards the upper directory is read as the change set and merged into the real
    workspace (``workspace/overlay_merge.py``). Nothing is walked but what changed.
``inventory`` (the fallback)
    An exact inventory (``take_inventory(exact=True)``: ignored paths and nested ``.git``
    included, permission bits recorded) before and after; O(repository).

The overlay is used unless one of these holds, in which case the inventory is (the
reason is kept in ``CaptureResult.reason``): ``TIDEGATE_EFFECT_CAPTURE=inventory``; the
probe found no working overlay (not Linux, no user namespaces, no usable upper file
system); a mount point lies inside the workspace (the overlay would hide it); the overlay
could not be mounted for this workspace (nothing has run yet). After the command, an upper layer that names a file with other hard
links is merged with an exact inventory around the merge (``overlay+inventory``): the
other names cannot be found without a walk. ``TIDEGATE_EFFECT_CAPTURE=overlay`` refuses
to run a command without the overlay.

The root's own ``.git`` is never reported (git's database; read-only under containment),
though what an uncontained command wrote there is merged like the rest.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import msgspec

from tidegate.exec.overlay import Overlay, OverlaySupport, mounts_below
from tidegate.exec.overlay.probe import probe
from tidegate.workspace.confine import RootHandle
from tidegate.workspace.fingerprint import (
    DEFAULT_DERIVED,
    DERIVED_MAX_ENTRIES,
    Inventory,
    InventoryChange,
    derived_fingerprint,
    diff_inventory,
    take_inventory,
)
from tidegate.workspace.ignores import ALWAYS_EXCLUDED, git_view, holding_tracked
from tidegate.workspace.overlay_merge import apply_merge, plan_merge, real_lstat

CAPTURE_ENV = "TIDEGATE_EFFECT_CAPTURE"
"""``auto`` (default), ``overlay`` (required) or ``inventory`` (forced fallback)."""

Method = Literal["overlay", "overlay+inventory", "inventory"]


class CaptureUnavailable(OSError):
    """``TIDEGATE_EFFECT_CAPTURE=overlay`` and the overlay cannot be used; nothing ran."""


class DerivedChange(msgspec.Struct, frozen=True):
    path: str
    before: str | None
    after: str | None


class CaptureResult(msgspec.Struct, frozen=True):
    changes: list[InventoryChange]
    derived: list[DerivedChange]
    method: Method
    reason: str
    before_bytes: dict[str, bytes] = msgspec.field(default_factory=dict)
    """The replaced or deleted files' bytes, read from the real tree before the overlay
    was merged (``finish(keep=...)``); empty for an inventory capture (hashes only)."""


class CommandCapture:
    """One command's capture: ``start`` before the spawn (mounts the overlay, or takes the
    "before" inventory), ``launcher`` for the runner, ``finish`` after, ``close``."""

    def __init__(self, root: Path, derived_dirs: tuple[str, ...] = DEFAULT_DERIVED) -> None:
        self.root = Path(os.path.realpath(root))
        self.names = frozenset(derived_dirs)
        self.overlay: Overlay | None = None
        self.support: OverlaySupport | None = None
        self.before: Inventory | None = None
        self.reason = ""

    @classmethod
    def start(cls, root: Path) -> CommandCapture:
        capture = cls(root)
        wanted = os.environ.get(CAPTURE_ENV, "auto")
        why = capture._overlay_refused(wanted)
        if why is None:
            try:
                assert capture.support is not None
                capture.overlay = Overlay(capture.root, capture.support)
                capture.reason = capture.support.reason
                return capture
            except OSError as exc:
                why = f"the overlay could not be mounted here: {exc}"
        if wanted == "overlay":
            raise CaptureUnavailable(f"{CAPTURE_ENV}=overlay but {why}")
        capture._fall_back(why)
        return capture

    def _overlay_refused(self, wanted: str) -> str | None:
        if wanted == "inventory":
            return f"forced by {CAPTURE_ENV}=inventory"
        self.support = probe()
        if not self.support.available:
            return self.support.reason
        inner = mounts_below(self.root)
        if inner:
            return f"{inner[0]} is a mount point inside the workspace"
        return None

    def _fall_back(self, why: str) -> None:
        self.reason = why
        self.before = take_inventory(self.root, exact=True)

    @property
    def method(self) -> Method:
        return "overlay" if self.overlay is not None else "inventory"

    # -- the runner's spawn hook ---------------------------------------------------------

    def launcher(self, cwd: Path) -> list[str]:
        return self.overlay.prefix(cwd) if self.overlay is not None else []

    # -- after the command -----------------------------------------------------------------

    def finish(self, keep: Callable[[str], bytes | None] | None = None) -> CaptureResult:
        """The command's changes; with the overlay, after merging them into the workspace.
        ``keep``: reads one root-relative file; called, before the merge, for each changed
        path that was a file (the lower layer is still the real tree then)."""
        if self.overlay is None:
            assert self.before is not None
            after = take_inventory(self.root, exact=True)
            return _from_inventories(self.before, after, "inventory", self.reason)
        overlay = self.overlay
        assert self.support is not None
        plan = plan_merge(
            self.root, overlay.upper, self.support.xattr_prefix, self.names, self._is_derived
        )
        kept = _read_before(plan.changes, keep)
        if plan.fallback is not None:
            before = take_inventory(self.root, exact=True)
            apply_merge(self.root, overlay.upper, plan)
            after = take_inventory(self.root, exact=True)
            result = _from_inventories(before, after, "overlay+inventory", plan.fallback)
            result.before_bytes.update(kept)
            return result
        derived_before = {d: self._derived_state(d) for d in sorted(plan.derived)}
        apply_merge(self.root, overlay.upper, plan)
        derived = [
            DerivedChange(d, b, a)
            for d, b in derived_before.items()
            if (a := self._derived_state(d)) != b
        ]
        changes = [
            InventoryChange(rel, c.before, c.after, c.before_mode, c.after_mode)
            for rel, c in sorted(plan.changes.items())
            if not _in_own_git(rel)
        ]
        return CaptureResult(changes, derived, "overlay", self.reason, kept)

    def close(self) -> None:
        if self.overlay is not None:
            self.overlay.release()
            self.overlay = None

    def _is_derived(self, rel: str) -> bool:
        """A derived-named directory is summarised unless a derived-named directory above
        it (then one holding tracked files) or tracked files inside make it source."""
        if any(part in self.names for part in rel.split("/")[:-1]) or _in_own_git(rel):
            return False
        view = git_view(self.root)
        return view is None or rel not in holding_tracked(view, [rel])

    def _derived_state(self, rel: str) -> str | None:
        st = real_lstat(self.root, rel)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return None
        with RootHandle(self.root) as handle:
            return derived_fingerprint(handle, rel, DERIVED_MAX_ENTRIES)


def _from_inventories(
    before: Inventory, after: Inventory, method: Method, reason: str
) -> CaptureResult:
    changes, derived_dirs = diff_inventory(before, after)
    derived = [DerivedChange(d, before.derived.get(d), after.derived.get(d)) for d in derived_dirs]
    return CaptureResult(changes, derived, method, reason)


def _read_before(
    changes: Mapping[str, Any], keep: Callable[[str], bytes | None] | None
) -> dict[str, bytes]:
    """What ``keep`` reads of each changed path that was a file (none without ``keep``)."""
    if keep is None:
        return {}
    out = {}
    for rel, change in changes.items():
        if change.before.kind == "file" and not _in_own_git(rel):
            data = keep(rel)
            if data is not None:
                out[rel] = data
    return out


def _in_own_git(rel: str) -> bool:
    return PurePosixPath(rel).parts[0] == ALWAYS_EXCLUDED
