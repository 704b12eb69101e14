"""The apply-back journal is durable before the first work-tree write, as the kernel sees it.

A power cut cannot be staged in a test, so the syscalls are watched instead: the real CLI
runs under ``strace`` and the order of its ``fsync`` and ``rename`` calls is checked. Every
blob must be fsynced, and the journal file too, before the journal is renamed into place;
the journal's directory must be fsynced after that rename; and all of this must come
before the first atomic rename into the user's work tree. Drop an fsync, or publish the
journal before its blobs, and this test fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.adversarial._applyback import NEW, OBJECTIVE, env, four_ops, on_disk
from tests.conftest import Repo

__all__ = ["four_ops"]

CALL = re.compile(r"^\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")


def _syscalls(repo: Repo, tmp_path: Path) -> list[tuple[str, str]]:
    log = tmp_path / "strace.log"
    res = subprocess.run(
        ["strace", "-f", "-y", "-s", "4096", "-o", str(log),
         "-e", "trace=fsync,fdatasync,rename,renameat,renameat2",
         sys.executable, "-m", "tidegate", "run", "--objective", OBJECTIVE],
        cwd=repo.root, env={**os.environ, **env(tmp_path)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    calls = []
    for line in log.read_text().splitlines():
        m = CALL.match(line)
        if m and m.group(3) == "0":
            calls.append((m.group(1), m.group(2)))
    return calls


def _first(calls: list[tuple[str, str]], name: str, pattern: str) -> int:
    rx = re.compile(pattern)
    return next(i for i, (n, args) in enumerate(calls) if n.startswith(name) and rx.search(args))


def test_blobs_and_journal_are_fsynced_before_it_is_published_and_before_any_write(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    calls = _syscalls(repo, tmp_path)
    assert on_disk(repo, NEW)

    journal = r"/\.git/tidegate/journal/[^/<>]+"
    published = _first(calls, "rename", journal + r'/journal\.json\.tmp".*journal\.json"')
    first_write = _first(calls, "rename", r"\.tidegate-tmp-")
    assert published < first_write
    for blob in ("0.old", "0.new", "1.old", "1.new", "2.old", "3.new"):
        assert _first(calls, "fsync", journal + "/" + re.escape(blob) + ">") < published, blob
    assert _first(calls, "fsync", journal + r"/journal\.json\.tmp>") < published
    directory_synced = next(
        i for i, (n, args) in enumerate(calls)
        if n == "fsync" and i > published and re.search(journal + ">", args)
    )  # fmt: skip
    assert directory_synced < first_write
