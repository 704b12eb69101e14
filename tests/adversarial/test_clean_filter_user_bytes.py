"""A clean filter hides the user's local lines from git; the apply-back must still keep them.

The repository has an nbstripout-style filter (``filter.strip.clean = sed '/^#local/d'``)
on ``*.cfg``. The user's settings.cfg holds lines starting with ``#local`` that git never
sees: the file hashes to the same blob as HEAD's. A verified change
to that file must not overwrite those bytes: the user's side of the merge is what is on
disk, not what the filter makes of it. A clean three-way merge keeps the lines; lines that
touch the change make a conflict that writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Repo

COMMITTED = b"a=1\nx=0\ny=0\nb=2\n"
EDIT = "edit-file: settings.cfg\nreplace: b=2\nwith: b=3\n"


@pytest.fixture
def filtered(repo: Repo) -> Repo:
    repo.git("config", "filter.strip.clean", "sed '/^#local/d'")
    repo.git("config", "filter.strip.smudge", "cat")
    repo.write(".gitattributes", "*.cfg filter=strip\n")
    repo.write("settings.cfg", COMMITTED)
    repo.commit_all()
    return repo


def test_hidden_local_lines_survive_a_change_elsewhere_in_the_file(
    filtered: Repo, tmp_path: Path
) -> None:
    repo = filtered
    mine = b"a=1\n#local debug=true\nx=0\ny=0\nb=2\n"
    repo.write("settings.cfg", mine)
    hidden = repo.git("hash-object", "--path=settings.cfg", "settings.cfg").strip()
    assert hidden == repo.git("rev-parse", "HEAD:settings.cfg").strip()  # git: "unchanged"
    index = repo.index_bytes()

    report = repo.run(EDIT)

    assert report.status == "succeeded", report.message
    assert (repo.root / "settings.cfg").read_bytes() == b"a=1\n#local debug=true\nx=0\ny=0\nb=3\n"
    [applied] = report.applied_files
    assert applied.merged is True
    assert repo.index_bytes() == index


def test_hidden_local_lines_next_to_the_change_are_a_conflict_not_an_overwrite(
    filtered: Repo, tmp_path: Path
) -> None:
    repo = filtered
    mine = b"a=1\nx=0\ny=0\n#local b=99\nb=2\n"
    repo.write("settings.cfg", mine)
    before = repo.tree_state()

    report = repo.run(EDIT)

    assert report.status == "conflict", report.message
    assert report.exit_code == 3
    assert "settings.cfg" in report.message
    assert (repo.root / "settings.cfg").read_bytes() == mine
    assert repo.tree_state() == before | {
        k: v
        for k, v in repo.tree_state().items()
        if k.startswith(".tidegate") or k.startswith("dir:.tidegate")
    }
