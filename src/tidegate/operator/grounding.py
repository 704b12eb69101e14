"""Repository grounding for the engineer: a repo-native, read-only scan (HEAD, tracked
files, languages, manifests, the validation command) and a snapshot of the git-visible
state that verification compares before and after an action."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from tidegate.workspace.repo import Repository


@dataclass(frozen=True)
class GitState:
    """What git shows of the work tree, and the index's bytes."""

    status: bytes
    index_sha256: str

    def changed_paths(self) -> dict[str, str]:
        """path -> two-letter porcelain status, from ``status --porcelain=v1 -z``."""
        out: dict[str, str] = {}
        items = self.status.split(b"\0")
        i = 0
        while i < len(items):
            item = items[i]
            if len(item) > 3:
                code = item[:2].decode()
                out[item[3:].decode("utf-8", "surrogateescape")] = code
                if code[0] in "RC":
                    i += 1  # the rename's source follows
            i += 1
        return out


def git_state(repo: Repository) -> GitState:
    status = repo.git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none"
    ).stdout
    index = repo.index_path
    digest = hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "absent"
    return GitState(status, digest)


def ground(repo: Repository) -> dict[str, Any]:
    from tidegate.workspace.project import detect_project

    tracked = [
        p.decode("utf-8", "surrogateescape")
        for p in repo.git.run("ls-files", "-z").stdout.split(b"\0")
        if p
    ]
    suffixes = Counter(PurePosixPath(p).suffix.lower() or "(none)" for p in tracked)
    report = detect_project(repo.root)
    state = git_state(repo)
    return {
        "workspace_root": str(repo.root),
        "head": repo.head,
        "tracked_files": len(tracked),
        "top_extensions": [f"{ext} {n}" for ext, n in suffixes.most_common(5)],
        "languages": dict(report.languages),
        "manifests": [f"{m.path} ({m.status})" for m in report.manifests],
        "validation_command": report.validation_command,
        "dirty_paths": len(state.changed_paths()),
        "scan_complete": report.complete,
    }


def scan_name(grounding: dict[str, Any]) -> str:
    return "project-manifest-scan" if grounding["manifests"] else "git-tracked-file-scan"
