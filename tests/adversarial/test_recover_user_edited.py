"""The user edits files after a crash in the middle of an apply-back, then recovers.

A real SIGKILL (``apply_back.after_write:2``) leaves a.txt and b.sh written, c.txt not yet
deleted, d/new.txt not yet created. The user then edits a.txt (already new) and c.txt
(still old). Neither ``recover`` nor ``recover --rollback`` may overwrite those bytes, and
neither may give up forever: they keep the user's file, write the version they wanted
under ``.tidegate/recovered/<run-id>/``, say so in one line per file, clear the journal,
and the next run is no longer refused.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.adversarial._applyback import NEW, OLD, env, four_ops, journals, run
from tests.conftest import Repo, tidegate_cli

__all__ = ["four_ops"]

MINE_A = b"one\nTWO\nthree\nmine\n"
MINE_C = b"gamma, edited after the crash\n"


def _crash_then_edit(repo: Repo, tmp_path: Path) -> str:
    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="apply_back.after_write:2")
    assert code == -signal.SIGKILL
    [jdir] = journals(repo)
    repo.write("a.txt", MINE_A)
    repo.write("c.txt", MINE_C)
    return jdir.name


@pytest.mark.parametrize("rollback", [False, True])
def test_recover_keeps_the_users_bytes_and_writes_its_side_beside_them(
    four_ops: Repo, tmp_path: Path, rollback: bool
) -> None:
    repo = four_ops
    index = repo.index_bytes()
    run_id = _crash_then_edit(repo, tmp_path)
    args = ["recover", "--rollback"] if rollback else ["recover"]

    res = tidegate_cli(*args, "--json", cwd=repo.root, env=env(tmp_path))

    assert res.returncode == 0, res.stderr
    [journal] = json.loads(res.stdout)["journals"]
    side = OLD if rollback else NEW
    copies = {k["path"]: k["side_copy"] for k in journal["kept"]}
    recovered = f".tidegate/recovered/{run_id}"
    assert copies == {
        "a.txt": f"{recovered}/a.txt",
        "c.txt": f"{recovered}/c.txt" if rollback else None,  # the change deletes c.txt
    }
    assert (repo.root / "a.txt").read_bytes() == MINE_A
    assert (repo.root / "c.txt").read_bytes() == MINE_C
    for path, copy in copies.items():
        if copy is not None:
            content, mode = side[path]  # type: ignore[misc]
            assert (repo.root / copy).read_bytes() == content
            assert (repo.root / copy).stat().st_mode & 0o777 == mode
    rest = {p: e for p, e in side.items() if p not in copies}
    for path, entry in rest.items():
        full = repo.root / path
        assert (full.read_bytes() if full.exists() else None) == (entry and entry[0])
    assert repo.index_bytes() == index
    assert journals(repo) == []
    assert "recovered" not in repo.status()  # .tidegate/ is excluded: no untracked noise

    again = tidegate_cli("run", "--objective", "create-file: z.txt\ncontent: <<<\nz\n>>>\n",
                         cwd=repo.root, env=env(tmp_path))  # fmt: skip
    assert again.returncode == 0, again.stderr  # no longer refused


def test_recover_says_what_it_kept_one_line_per_file(four_ops: Repo, tmp_path: Path) -> None:
    repo = four_ops
    run_id = _crash_then_edit(repo, tmp_path)

    res = tidegate_cli("recover", cwd=repo.root, env=env(tmp_path))

    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert (
        f"  kept your edit of a.txt (changed after the crash); the new version is in "
        f".tidegate/recovered/{run_id}/a.txt" in lines
    )
    assert (
        "  kept your edit of c.txt (changed after the crash); the new version has no file there"
        in lines
    )
    assert "Traceback" not in res.stderr
