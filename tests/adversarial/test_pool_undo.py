"""The warm pool's undo: VERIFY's command writes into a throwaway overlay over the shadow,
so the shadow holds only what APPLY wrote, and the next run (or ROLLBACK) undoes exactly
that. Whatever the undo cannot vouch for -- a command that wrote the shadow itself, git's
state of the shadow changed, files planted at its top, a record that does not fit -- gets
the full cleaning, and the next run's VERIFY still sees exactly its T0."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._pool import pool_path, remove_pool
from tests.conftest import Repo
from tidegate.exec.overlay.probe import probe

needs_layer = pytest.mark.skipif(
    not probe().available,
    reason=f"no overlay here, so no layer and no record to undo by: {probe().reason}",
)
"""Only what needs the layer; without one, every cleaning is the full one (tested below)."""

EDIT = "edit-file: f.txt\nreplace: two\nwith: TWO\n"
CREATE = EDIT + "\ncreate-file: pkg/new/mod.py\ncontent: x = 1\n"
LITTER = (
    "echo x > litter.txt && mkdir -p deep/er && echo y > deep/er/z && echo z > pkg/sub/b.log"
    " && echo changed > keep.txt && rm pkg/sub/a.py && chmod +x keep.txt"
)
CLEAN_T0 = (
    "test ! -e pkg/new && test ! -e litter.txt && test ! -e deep && test ! -e pkg/sub/b.log"
    " && grep -qx kept keep.txt && test -f pkg/sub/a.py && test ! -x keep.txt"
)


@pytest.fixture
def work(repo: Repo) -> Iterator[Repo]:
    repo.write(".gitignore", "*.log\n")
    repo.write("f.txt", "one\ntwo\n")
    repo.write("keep.txt", "kept\n")
    repo.write("pkg/sub/a.py", "a = 1\n")
    repo.commit_all()
    yield repo
    remove_pool(repo)


def _record(repo: Repo) -> Path:
    return repo.root / ".git" / "tidegate" / "shadow-pool.touched"


def _revert(repo: Repo) -> None:
    """The user takes the run's change back out of the work tree."""
    repo.git("checkout", "--", "f.txt")
    shutil.rmtree(repo.root / "pkg" / "new", ignore_errors=True)


def _cleaned(report_notes: list[str]) -> str:
    (note,) = [n for n in report_notes if n.startswith("reused the warm shadow")]
    return "undo" if "by undoing" in note else "full"


def _next_run_cleans_in_full(work: Repo, also: str = "") -> None:
    """The user takes the change back; the next run finds its T0 exactly (``CLEAN_T0``,
    and ``also``) in one attempt, after the full cleaning."""
    _revert(work)
    second = work.run(EDIT, verify=CLEAN_T0 + also, warm_shadow=True)
    assert second.status == "succeeded", second.message
    assert second.attempts == 1
    assert _cleaned(second.notes) == "full"


@needs_layer
def test_verify_writes_stay_in_the_layer_and_the_next_run_undoes_only_apply(work: Repo) -> None:
    first = work.run(CREATE, verify=LITTER, warm_shadow=True)
    assert first.status == "succeeded", first.message
    pool = pool_path(work)
    # The command wrote, deleted and chmod-ed in its layer only: the shadow holds the
    # candidate and nothing of the command.
    assert not (pool / "litter.txt").exists() and not (pool / "deep").exists()
    assert not (pool / "pkg" / "sub" / "b.log").exists()
    assert (pool / "keep.txt").read_text() == "kept\n"
    assert (pool / "pkg" / "sub" / "a.py").is_file()
    assert (pool / "pkg" / "new" / "mod.py").read_text() == "x = 1"
    recorded = json.loads(_record(work).read_text())
    assert recorded["tracked"] == ["f.txt"]
    assert recorded["untracked"] == ["pkg/new", "pkg/new/mod.py"]

    _revert(work)
    index = work.index_bytes()
    other = "edit-file: pkg/sub/a.py\nreplace: a = 1\nwith: a = 2\n"
    second = work.run(other, verify=CLEAN_T0 + " && grep -qx two f.txt", warm_shadow=True)
    assert second.status == "succeeded", second.message
    assert second.attempts == 1
    assert _cleaned(second.notes) == "undo"
    assert work.index_bytes() == index
    git_dir = (pool / ".git").read_text().split(":", 1)[1].strip()
    status = work.git(
        "--git-dir",
        git_dir,
        "--work-tree",
        str(pool),
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    )
    assert status == " M pkg/sub/a.py\n"  # only this run's candidate


@pytest.mark.parametrize("how", ["config", "mount-fault"])
def test_a_command_that_wrote_the_shadow_itself_means_a_full_cleaning(
    work: Repo, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "config":
        work.write(".tidegate/config.toml", '[shadow]\nverify_layer = "off"\n')
    else:
        monkeypatch.setenv("TIDEGATE_FAULT", "overlay.mount")
    first = work.run(CREATE, verify=LITTER, warm_shadow=True)
    assert first.status == "succeeded", first.message
    pool = pool_path(work)
    assert (pool / "deep" / "er" / "z").is_file()  # no layer: the command wrote the shadow
    assert not _record(work).exists()

    monkeypatch.delenv("TIDEGATE_FAULT", raising=False)
    _next_run_cleans_in_full(work)


@needs_layer
def test_git_state_of_the_pool_changed_between_runs_means_a_full_cleaning(work: Repo) -> None:
    assert work.run(CREATE, warm_shadow=True).status == "succeeded"
    pool = pool_path(work)
    git_dir = (pool / ".git").read_text().split(":", 1)[1].strip()
    # Deep enough that no directory the tripwire watches changes: only git's index does.
    (pool / "pkg" / "sub" / "staged.py").write_text("staged = 1\n")
    work.git("--git-dir", git_dir, "--work-tree", str(pool), "add", "pkg/sub/staged.py")

    _next_run_cleans_in_full(work, " && test ! -e pkg/sub/staged.py")


@needs_layer
@pytest.mark.parametrize("where", ["planted", "pkg/planted"])
def test_a_file_planted_at_the_top_of_the_pool_means_a_full_cleaning(
    work: Repo, where: str
) -> None:
    assert work.run(CREATE, warm_shadow=True).status == "succeeded"
    (pool_path(work) / where).write_text("planted between runs\n")

    _next_run_cleans_in_full(work, f" && test ! -e {where}")


@needs_layer
def test_a_forged_record_reaches_nothing_outside_thepool_path(work: Repo) -> None:
    assert work.run(CREATE, warm_shadow=True).status == "succeeded"
    pool = pool_path(work)
    outside = pool.parent / f"{pool.name}-outside"
    outside.mkdir()
    (outside / "precious").write_text("not the pool's\n")
    data = json.loads(_record(work).read_text())
    data["untracked"] += [f"../{outside.name}", str(outside), ".git", ":(glob)**"]
    data["tracked"] += [f"../{outside.name}/precious"]
    _record(work).write_text(json.dumps(data))
    try:
        _next_run_cleans_in_full(work)  # git refused the pathspecs: the full way
        assert (outside / "precious").read_text() == "not the pool's\n"
        assert (pool / ".git").is_file()
    finally:
        shutil.rmtree(outside)


@needs_layer
@pytest.mark.parametrize("damage", ["garbage", "other-shadow", "missing-key"])
def test_a_record_that_does_not_fit_means_a_full_cleaning(work: Repo, damage: str) -> None:
    assert work.run(CREATE, warm_shadow=True).status == "succeeded"
    record = _record(work)
    if damage == "garbage":
        record.write_bytes(b"\xff{not json")
    else:
        data = json.loads(record.read_text())
        if damage == "other-shadow":
            data["shadow"] += "-elsewhere"
        else:
            del data["marks"]
        record.write_text(json.dumps(data))

    _next_run_cleans_in_full(work)
    assert record.exists()  # this run's own, written as it ended
    assert json.loads(record.read_text())["tracked"] == ["f.txt"]


@needs_layer
def test_rollback_undoes_what_the_failed_attempt_wrote(work: Repo, tmp_path: Path) -> None:
    script = tmp_path / "attempts.json"
    script.write_text(
        json.dumps(
            {
                "attempts": [
                    {"objective": "create-file: pkg/bad/x.py\ncontent: bad = 1\n"},
                    {"objective": "create-file: pkg/good.py\ncontent: good = 1\n"},
                ]
            }
        )
    )
    report = work.run(
        "add a module",
        verify="echo litter > litter.txt && test ! -e pkg/bad",
        planner=f"scripted:{script}",
        warm_shadow=True,
    )
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    rollback = [p for p in report.phases if p.phase == "ROLLBACK"]
    assert rollback and "undid the 2 path(s)" in rollback[0].detail
    assert (work.root / "pkg" / "good.py").is_file()
    assert not (work.root / "pkg" / "bad").exists()


@needs_layer
def test_an_uncontained_share_link_is_undone_with_the_rest(work: Repo) -> None:
    """Uncontained, a shared ignored directory is a symlink tidegate makes in the shadow
    itself: it is recorded like APPLY's paths, and the next run's undo takes it away."""
    work.write(".gitignore", "*.log\n.venv/\n")
    work.commit_all()
    work.write(".venv/bin/tool", "#!/bin/sh\n")
    first = work.run(CREATE, verify="test -L .venv", warm_shadow=True, containment="none")
    assert first.status == "succeeded", first.message
    assert ".venv" in json.loads(_record(work).read_text())["untracked"]

    _revert(work)
    work.write(".tidegate/config.toml", "[containment]\nshare = []\n")
    second = work.run(
        EDIT, verify=CLEAN_T0 + " && test ! -e .venv", warm_shadow=True, containment="none"
    )
    assert second.status == "succeeded", second.message
    assert _cleaned(second.notes) == "undo"


def test_a_pool_whose_git_link_names_another_work_tree_is_not_reused(
    work: Repo, tmp_path: Path
) -> None:
    """Something rewrote the pooled shadow's ``.git`` to another linked work tree's admin
    dir (of the same repository, so it passes the link check alone): that admin dir does
    not name the pool back, so the pool is replaced and the other work tree is untouched."""
    assert work.run(EDIT, warm_shadow=True).status == "succeeded"
    pool = pool_path(work)
    other = tmp_path / "other"
    work.git("worktree", "add", "--detach", str(other))
    admin = Path((other / ".git").read_text().split("gitdir: ", 1)[1].strip())
    (pool / ".git").write_text(f"gitdir: {admin}\n")
    work.git("checkout", "--", "f.txt")
    report = work.run(EDIT, warm_shadow=True)
    assert report.status == "succeeded", report.message
    assert not any("reused" in n for n in report.notes)
    assert pool_path(work) != pool
    assert (other / "f.txt").read_text() == "one\ntwo\n"
    assert work.git("-C", str(other), "status", "--porcelain") == ""
