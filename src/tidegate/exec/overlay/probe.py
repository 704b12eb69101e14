"""Whether per-command overlays work here: one overlay mounted, written through and read
back, once per process."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from tidegate.exec.overlay import Overlay, OverlaySupport
from tidegate.exec.overlay.host import HOST_TIMEOUT_S, as_user
from tidegate.exec.trees import remove_tree

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
    user = as_user()
    support = OverlaySupport(
        True,
        "overlayfs in tidegate's mount namespace" + (" inside a user namespace" if user else ""),
        user_namespace=user,
        xattr_prefix="user.overlay." if user else "trusted.overlay.",
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
                timeout=HOST_TIMEOUT_S,
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
