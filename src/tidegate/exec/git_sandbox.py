"""A read-only bubblewrap view for git calls made on a model's or client's behalf.

git.exec's allowlist is a parser; this is the layer under it, so that a case the parser
missed still cannot reach the host. The sandbox sees only the system's programs and
libraries (``/usr`` and the ``/bin``-style links or directories next to it) and the
repository — its work tree, its git dir and the common git dir — all bound read-only.
Nothing else of the filesystem exists inside (no home, no ``/etc``, no ``/tmp``), there is
no network, its own pid namespace and no capabilities. A program git was somehow made to
start could read the repository and write nothing.

``git_sandbox_prefix`` returns the bwrap argv that launches git this way, or None when
bubblewrap is unavailable or failed ``containment.probe`` (the caller decides whether to
run uncontained or to refuse).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from tidegate.exec.containment import bwrap_executable, probe

_SYSTEM_DIRS = ("/usr",)
_SYSTEM_LINKS_OR_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def git_sandbox_prefix(
    repository: Sequence[Path], cwd: Path, bwrap: str | None = None
) -> list[str] | None:
    """The argv prefix that runs git read-only over ``repository`` (its work tree and git
    dirs), in ``cwd``; None when bubblewrap did not pass its probe here."""
    if not probe(bwrap).verified:
        return None
    exe = bwrap_executable(bwrap)
    if exe is None:
        return None
    argv = [
        exe,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
    ]
    for path in _SYSTEM_DIRS:
        argv += ["--ro-bind", path, path]
    for path in _SYSTEM_LINKS_OR_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    git = shutil.which("git")
    if git is not None:  # a git installed outside /usr (its prefix holds its helpers)
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(git)))
        if not prefix.startswith("/usr") and prefix != "/":
            argv += ["--ro-bind", prefix, prefix]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    mounts = sorted({os.path.realpath(p) for p in repository if os.path.exists(p)})
    for path in sorted(mounts, key=lambda p: len(Path(p).parts)):
        argv += ["--ro-bind", path, path]
    return [*argv, "--chdir", os.path.realpath(cwd), "--"]
