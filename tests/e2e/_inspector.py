"""What the inspector's tests share: real runs recorded by the CLI, the store they wrote
(edited with sqlite3 the way a tamperer or a planted value would leave it), and the
inspector served in this process on a free port."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import Repo, tidegate_cli
from tidegate.inspector.server import Inspector

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def record_two(repo: Repo) -> tuple[str, str]:
    """A run that succeeds and a newer one that fails: their ids."""
    ok = tidegate_cli("run", "--objective", FIX, "--verify", "true", cwd=repo.root)
    assert ok.returncode == 0, ok.stderr
    repo.git("checkout", "-q", "calc.py")
    failed = tidegate_cli(
        "run", "--objective", FIX, "--verify", "echo 'AssertionError: add is wrong'; false",
        "--max-attempts", "2", cwd=repo.root,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    ids = [r[0] for r in query("SELECT run_id FROM runs ORDER BY seq")]
    return ids[0], ids[1]


def store_path() -> Path:
    (path,) = Path(os.environ["TIDEGATE_STATE_ROOT"]).glob("*/runs.sqlite3")
    return path


def query(sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store_path()) as db:
        return list(db.execute(sql, params).fetchall())


def edit(sql: str, params: tuple[object, ...] = ()) -> None:
    with sqlite3.connect(store_path()) as db:
        db.execute(sql, params)


def report(run_id: str) -> dict[str, Any]:
    ((text,),) = query("SELECT report_json FROM runs WHERE run_id = ?", (run_id,))
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def set_report(run_id: str, **changes: object) -> None:
    value = {**report(run_id), **changes}
    edit("UPDATE runs SET report_json = ? WHERE run_id = ?", (json.dumps(value), run_id))


@contextmanager
def served(repo: Repo) -> Iterator[Inspector]:
    inspector = Inspector(str(repo.root)).start()
    try:
        yield inspector
    finally:
        inspector.close()
