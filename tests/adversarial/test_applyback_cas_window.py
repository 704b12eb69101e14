"""The user saves a file after the merge was planned and before tidegate writes it.

``apply_back.before_cas:N=run`` runs a shell command at that exact moment (between the
plan and the N-th write). The compare-and-swap before each write must notice the file is
no longer what the merge was computed from, undo the writes already made, and keep the
user's new bytes; the run reports a conflict and nothing is applied.
"""

from __future__ import annotations

from pathlib import Path

from tests.adversarial._applyback import OLD, four_ops, journals, on_disk, run
from tests.conftest import Repo

__all__ = ["four_ops"]


def test_an_edit_in_the_window_undoes_the_apply_back_and_keeps_the_edit(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    edited = OLD["b.sh"][0] + b"echo mine\n"  # type: ignore[index]
    index = repo.index_bytes()

    code, report, err = run(
        repo,
        tmp_path,
        TIDEGATE_FAULT="apply_back.before_cas:2=run",
        TIDEGATE_FAULT_RUN="printf 'echo mine\\n' >> b.sh",
    )

    assert code == 3, err
    assert report["status"] == "conflict"
    assert "b.sh changed while tidegate was writing; nothing was applied" in report["message"]
    assert report["applied_files"] == []
    assert (repo.root / "b.sh").read_bytes() == edited
    rest = {p: e for p, e in OLD.items() if p != "b.sh"}
    assert on_disk(repo, rest)  # a.txt, written first, is back to its old bytes and mode
    assert repo.index_bytes() == index
    assert journals(repo) == []


def test_a_file_created_in_the_window_is_not_replaced(four_ops: Repo, tmp_path: Path) -> None:
    repo = four_ops
    code, report, err = run(
        repo,
        tmp_path,
        TIDEGATE_FAULT="apply_back.before_cas:4=run",
        TIDEGATE_FAULT_RUN="mkdir -p d && printf 'mine\\n' > d/new.txt",
    )

    assert code == 3, err
    assert "d/new.txt changed while tidegate was writing" in report["message"]
    assert (repo.root / "d" / "new.txt").read_bytes() == b"mine\n"
    rest = {p: e for p, e in OLD.items() if p != "d/new.txt"}
    assert on_disk(repo, rest)
