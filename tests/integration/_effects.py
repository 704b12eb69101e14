"""Helpers for effect-capture tests: run command.run under a chosen capture method, and an
independent oracle -- the test's own walk of the workspace, hashes and modes -- that the
host-attested effects must equal exactly."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.tools.support import call, executor
from tidegate.exec.overlay.probe import probe
from tidegate.tools.calls import ToolResult
from tidegate.tools.capture import CAPTURE_ENV
from tidegate.tools.context import ApprovalAnswer
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile

State = tuple[str, str | None, str | None]
"""(kind, sha256 or None, octal mode or None), as a write effect spells a state."""

METHODS = ("overlay", "inventory")
DERIVED = {"node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache"}


class Yes:
    """Approves every call (uncontained commands always ask)."""

    def request(self, request: Any, timeout_s: float) -> ApprovalAnswer:
        return ApprovalAnswer(request.request_id, True)


def use_method(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """``overlay`` is *required* (a capture that cannot use it fails the call instead of
    silently testing the fallback twice); ``inventory`` forces the fallback."""
    if method == "overlay" and not probe().available:
        pytest.skip(f"this host cannot mount overlays: {probe().reason}")
    monkeypatch.setenv(CAPTURE_ENV, method)


@contextmanager
def host(root: Path, containment: str = "none") -> Iterator[ToolExecutor]:
    with executor(
        root,
        containment=containment,
        approval=ApprovalProfile.TRUSTED_WORKSPACE,
        approver=Yes(),
    ) as ex:
        yield ex


def run(ex: ToolExecutor, command: str) -> ToolResult:
    result = ex.execute(call("command_run", command=command))
    assert result.ok, result.error
    assert result.output is not None and result.output["exit_code"] == 0, result.output
    return result


def effects(result: ToolResult) -> dict[str, tuple[State, State]]:
    return {
        w.path: ((w.before.kind, w.before.sha256, w.before.mode), (w.after.kind, w.after.sha256, w.after.mode))
        for w in result.effects.write
    }  # fmt: skip


def snapshot(root: Path) -> dict[str, State]:
    """Every path below ``root`` but its own ``.git`` and derived directories, typed,
    hashed and moded -- written independently of tidegate's walkers."""
    out: dict[str, State] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        keep = []
        for name in dirnames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel == ".git" or (
                name in DERIVED and not os.path.islink(os.path.join(dirpath, name))
            ):
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in [*keep, *filenames]:  # symlinks to directories are in ``keep``, unwalked
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            out[rel] = state(Path(dirpath, name))
    return out


def state(path: Path) -> State:
    st = os.lstat(path)
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if stat.S_ISDIR(st.st_mode):
        return ("dir", None, mode)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(os.fsencode(path))
        return ("symlink", "sha256:" + hashlib.sha256(b"symlink\0" + target).hexdigest(), None)
    if stat.S_ISREG(st.st_mode):
        return ("file", "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest(), mode)
    return ("special", "?", None)


def oracle(before: dict[str, State], after: dict[str, State]) -> dict[str, tuple[State, State]]:
    missing: State = ("missing", None, None)
    return {
        p: (before.get(p, missing), after.get(p, missing))
        for p in sorted(set(before) | set(after))
        if before.get(p, missing) != after.get(p, missing)
    }


def checked(ex: ToolExecutor, root: Path, command: str) -> dict[str, tuple[State, State]]:
    """Run ``command``; assert its reported writes equal the oracle's diff; return them."""
    before = snapshot(root)
    result = run(ex, command)
    got = effects(result)
    want = oracle(before, snapshot(root))
    specials = {p for p, (b, a) in want.items() if "special" in (b[0], a[0])}
    assert {p: v for p, v in got.items() if p not in specials} == {
        p: v for p, v in want.items() if p not in specials
    }
    assert set(got) == set(want)
    return got
