"""Repository grounding for the engineer: a repo-native, read-only scan (HEAD, tracked
files, languages, manifests, the validation command) and a snapshot of the git-visible
state that verification compares before and after an action."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from tidegate.workspace.repo import Repository


class GitState(msgspec.Struct, frozen=True):
    """What git shows of the work tree, the content of every path it lists, and the
    index's bytes. A path the user had already edited shows the same status code after
    the run merged into it: only its content tells whether it changed."""

    status: bytes
    index_sha256: str
    contents: dict[str, str] = msgspec.field(default_factory=dict)
    """path -> ``file_sha256`` of each path ``status`` lists."""

    def changed_since(self, before: GitState) -> list[str]:
        """The paths whose status code or content differ from ``before``, leaving out
        tidegate's own ``.tidegate/`` (a run adds it to ``.git/info/exclude``, so what
        you keep there stops being listed, and it writes ``.rej`` files there)."""
        now, then = self.changed_paths(), before.changed_paths()
        return sorted(
            path
            for path in set(now) | set(then)
            if not path.startswith(".tidegate/")
            and (
                now.get(path) != then.get(path)
                or self.contents.get(path) != before.contents.get(path)
            )
        )

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


def git_state(repo: Repository, *, contents: bool = True) -> GitState:
    """The state of the work tree and the index; ``contents=False`` skips hashing the
    listed paths (a count of dirty paths needs none)."""
    status = repo.git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none"
    ).stdout
    index = repo.index_path
    digest = hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "absent"
    state = GitState(status, digest)
    if not contents:
        return state
    hashed = {path: file_sha256(repo.root / path) for path in state.changed_paths()}
    return GitState(status, digest, hashed)


def file_sha256(path: Path) -> str:
    """The SHA-256 of the bytes at ``path`` (a symlink's target text), or ``absent``."""
    try:
        if os.path.islink(path):
            return hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except IsADirectoryError:
        return "directory"
    except OSError:
        return "absent"


def ground(repo: Repository) -> dict[str, Any]:
    from tidegate.workspace.project import detect_project

    tracked = [
        p.decode("utf-8", "surrogateescape")
        for p in repo.git.run("ls-files", "-z").stdout.split(b"\0")
        if p
    ]
    suffixes = Counter(PurePosixPath(p).suffix.lower() or "(none)" for p in tracked)
    report = detect_project(repo.root)
    state = git_state(repo, contents=False)
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
