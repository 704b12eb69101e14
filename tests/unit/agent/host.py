"""A few real host observations for guard and ledger tests: file digests, a validation run
as a real subprocess, and a workspace diff from real git."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path


def content_hash(path: Path) -> str | None:
    if not path.exists():
        return None
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(root: Path) -> str:
    """Digest of every non-git file's path and bytes: changes whenever the tree changes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return "sha256:" + digest.hexdigest()


def run_validation(root: Path, check: str) -> bool:
    """Run ``check`` (Python source) in ``root`` in a real interpreter; True when it exits 0."""
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=root, capture_output=True, check=False, timeout=60
    )
    return result.returncode == 0


def diff_hash(root: Path) -> str:
    diff = subprocess.run(
        ["git", "diff", "--no-ext-diff", "--binary"],
        cwd=root,
        capture_output=True,
        check=True,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    ).stdout
    return "sha256:" + hashlib.sha256(diff).hexdigest()
