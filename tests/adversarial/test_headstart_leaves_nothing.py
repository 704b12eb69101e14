"""The head start (``tidegate.flow.headstart``) registers the run (its own lock), claims a
scratch directory and scans the work tree before the command line is even parsed. Whatever
then refuses the run (a bad option, another repository, a crash record), it must leave
nothing behind: no live registration, no scratch directory, no claim, no ref, the work tree
and the index byte for byte as they were.

In-process (``tidegate.cli.main``), so that a registration the head start failed to
release is still held when the test looks (the kernel would release it at a subprocess's
exit and hide the leak)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.cli import main, runcmd
from tidegate.flow import headstart
from tidegate.workspace.lock import RunLock, live_runs

OBJECTIVE = "edit-file: f.txt\nreplace: two\nwith: TWO\n"


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private TMPDIR (shadows and scratch directories go there)."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    yield private
    headstart.discard()


@pytest.fixture
def dirty(repo: Repo) -> Repo:
    repo.write("f.txt", "one\ntwo\n")
    repo.write("g.txt", "g\n")
    repo.commit_all()
    repo.write("g.txt", "staged\n")
    repo.git("add", "g.txt")
    repo.write("g.txt", "unstaged on top\n")
    repo.write("new.txt", "untracked\n")
    # As an earlier run leaves it (the head start does not run without it).
    (repo.root / ".git" / "info").mkdir(exist_ok=True)
    (repo.root / ".git" / "info" / "exclude").write_text("/.tidegate/\n")
    return repo


def _nothing_left(repo: Repo, tmp: Path, before: dict[str, object], refs: str) -> None:
    assert live_runs(repo.root / ".git" / "tidegate") == []  # no registration kept
    assert sorted(p.name for p in tmp.iterdir()) == []
    claims = repo.root / ".git" / "tidegate" / "claims"
    assert not claims.exists() or list(claims.iterdir()) == []
    assert repo.git("for-each-ref") == refs
    assert repo.tree_state() == before


def test_a_refused_option_leaves_nothing(dirty: Repo, tmp: Path) -> None:
    before, refs = dirty.tree_state(), dirty.git("for-each-ref")
    code = main(["run", "--repo", str(dirty.root), "--objective", OBJECTIVE, "--no-such-flag"])
    assert code == 2
    _nothing_left(dirty, tmp, before, refs)


def test_a_missing_objective_leaves_nothing(dirty: Repo, tmp: Path) -> None:
    before, refs = dirty.tree_state(), dirty.git("for-each-ref")
    assert main(["run", "--repo", str(dirty.root), "--verify", "true"]) == 2
    _nothing_left(dirty, tmp, before, refs)


def test_a_head_start_for_another_repository_is_dropped(
    dirty: Repo, tmp: Path, tmp_path: Path
) -> None:
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    other.git("init", "-q")
    other.write("f.txt", "one\ntwo\n")
    other.commit_all()
    before, refs = dirty.tree_state(), dirty.git("for-each-ref")
    headstart.begin(dirty.root, warm=False, probe=None)
    assert headstart.adopt(other.root) is None
    _nothing_left(dirty, tmp, before, refs)


def test_another_live_run_does_not_stop_a_head_started_run(dirty: Repo, tmp: Path) -> None:
    """Runs go on side by side: another live run's registration is neither a refusal nor
    touched; the head-started run lands and leaves nothing of its own."""
    runtime = dirty.root / ".git" / "tidegate"
    holder = RunLock(runtime, "someone-else").acquire()
    try:
        code = main(["run", "--repo", str(dirty.root), "--objective", OBJECTIVE, "--json"])
        assert code == 0
        assert [r["run_id"] for r in live_runs(runtime)] == ["someone-else"]
        assert sorted(p.name for p in tmp.iterdir()) == []
        assert dirty.read("f.txt") == "one\nTWO\n"
    finally:
        holder.release()


def test_a_pending_apply_back_still_refuses_and_leaves_nothing(dirty: Repo, tmp: Path) -> None:
    pending = dirty.root / ".git" / "tidegate" / "journal" / "20990101-000000-abcdef"
    pending.mkdir(parents=True)
    before, refs = dirty.tree_state(), dirty.git("for-each-ref")
    code = main(["run", "--repo", str(dirty.root), "--objective", OBJECTIVE])
    assert code == 2
    _nothing_left(dirty, tmp, before, refs)


def test_the_adopted_t0_is_the_work_tree_and_staged_state(
    dirty: Repo, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI (head start taken): T0 has the unstaged and untracked bytes, its
    index commit the staged ones, and the merge back leaves the index as it was."""
    adopted: list[object] = []
    real_adopt = headstart.adopt

    def adopt(repo_path: Path) -> headstart.HeadStart | None:
        adopted.append(real_adopt(repo_path))
        return adopted[-1]  # type: ignore[return-value]

    monkeypatch.setattr(headstart, "adopt", adopt)
    index = dirty.index_bytes()
    code = main(["run", "--repo", str(dirty.root), "--objective", OBJECTIVE, "--json"])
    assert code == 0
    run = _kept_run(dirty)
    assert dirty.git("show", f"{run}/t0/g.txt") == "unstaged on top\n"
    assert dirty.git("show", f"{run}/t0/new.txt") == "untracked\n"
    assert dirty.git("show", f"{run}/index/g.txt") == "staged\n"
    assert dirty.read("f.txt") == "one\nTWO\n"
    assert dirty.index_bytes() == index
    assert sorted(p.name for p in tmp.iterdir()) == []
    assert len(adopted) == 1 and adopted[0] is not None  # T0 came from the head start


def test_without_the_exclusion_line_the_run_writes_it_and_t0_skips_tidegate_dir(
    dirty: Repo, tmp: Path
) -> None:
    """The head start never writes ``.git/info/exclude``; a first run does, before T0, so
    ``.tidegate/`` (rejects, notes) is never part of T0."""
    exclude = dirty.root / ".git" / "info" / "exclude"
    exclude.write_text("# nothing of tidegate's\n")
    dirty.write(".tidegate/notes/x.txt", "runtime\n")
    code = main(["run", "--repo", str(dirty.root), "--objective", OBJECTIVE, "--json"])
    assert code == 0
    assert "/.tidegate/" in exclude.read_text()
    assert ".tidegate" not in dirty.git("ls-tree", "-r", "--name-only", f"{_kept_run(dirty)}/t0")


def _kept_run(repo: Repo) -> str:
    """``refs/tidegate/keep:<run-id>`` of the one run kept (an ended run is folded there)."""
    (run_id,) = repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split()
    return f"refs/tidegate/keep:{run_id}"


@pytest.mark.parametrize(
    "args",
    [["run", "--help"], ["review", "run", "--help"], ["review", "read", "x"], ["run", "--bogus"]],
    ids=" ".join,
)
def test_no_head_start_for_what_goes_to_typer(dirty: Repo, args: list[str]) -> None:
    """A command line the typer application parses (help, the review records, an unknown
    option) starts no head start: nothing is scanned, locked or claimed for it."""
    assert runcmd.dispatch([*args, "--repo", str(dirty.root)]) is None
    assert headstart.adopt(dirty.root) is None
    assert not (dirty.root / ".git" / "tidegate" / "claims").exists()
