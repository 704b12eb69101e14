"""A change as ACP diff content: one per text file, its old and new text read from the
repository's objects, which an editor shows as its own diff view. Binary, large or
unreadable files are left out (the unified diff beside them still shows them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp

MAX_SHOWN = 1024 * 1024
"""The largest file shown as ACP diff content, in bytes."""
MAX_FILES = 100


def text_diffs(repo: Path, old: str | None, new: str, paths: list[str]) -> list[Any]:
    """``paths`` between the commit or tree ``old`` (None: all new) and ``new``."""
    from tidegate.errors import TidegateError
    from tidegate.workspace.repo import discover

    try:
        git = discover(repo).git
    except TidegateError:
        return []

    def text(spec: str) -> str | None:
        res = git.run("cat-file", "blob", spec, check=False)
        if res.returncode != 0 or len(res.stdout) > MAX_SHOWN or b"\x00" in res.stdout:
            return None
        try:
            return res.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None

    out: list[Any] = []
    try:
        for path in paths[:MAX_FILES]:
            before = text(f"{old}:{path}") if old else None
            after = text(f"{new}:{path}")
            if before is None and after is None:
                continue
            out.append(acp.tool_diff_content(str(repo / path), after or "", before))
    except TidegateError:
        return out
    return out
