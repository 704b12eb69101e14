"""A change creates a path where the user keeps an ignored file (a log, a local build
output). Ignored files are not in T0, so the change was made without seeing it, and the
user did nothing during the run: APPLY_BACK must say so rather than "you created this
path since the run started", write nothing, keep the file's bytes, and explain in the
``.rej``. A file that is not ignored and appears during the run is still the user's new
file."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.adversarial._repo_shapes import cli, report_of, without_tidegate
from tests.conftest import Repo

MINE = b"my local log, never committed\n"
CREATE = "create-file: {path}\ncontent: <<<\ncreated by the change\n>>>\n"


def _repo(repo: Repo) -> Repo:
    repo.write(".gitignore", "*.log\nbuild/\n")
    repo.write("app.py", "x = 1\n")
    repo.commit_all()
    repo.write("app.py", "x = 2  # yours, unstaged\n")
    return repo


def test_an_ignored_file_in_the_way_is_named_as_such_and_kept(repo: Repo) -> None:
    repo = _repo(repo)
    repo.write("out.log", MINE)
    repo.write("build/gen.txt", MINE)
    before = repo.tree_state(with_mtimes=True)

    objective = CREATE.format(path="out.log") + "\n" + CREATE.format(path="build/gen.txt")
    res = cli("run", "--objective", objective, "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 3, report["message"]
    assert report["status"] == "conflict" and report["applied_files"] == []
    assert "a file git ignores is already at this path" in report["message"]
    assert "you created" not in report["message"]
    assert "conflict with your edits" not in report["message"]
    rejects = sorted(Path(repo.root / r) for r in report["rejects"])
    assert [r.name for r in rejects] == ["gen.txt.rej", "out.log.rej"]
    for rej in rejects:
        header = rej.read_text().splitlines()[0]
        assert "a file git ignores is already at this path" in header, header
        assert "not in the T0 snapshot" in header
    # Nothing written: every byte (and mtime) of the work tree, ignored files included,
    # and the index as they were; only the .rej files under .tidegate/ are new.
    assert without_tidegate(repo.tree_state(with_mtimes=True)) == without_tidegate(before)


def test_a_file_that_is_not_ignored_and_appears_during_the_run_is_still_yours(
    repo: Repo, tmp_path: Path
) -> None:
    repo = _repo(repo)
    repo.write(".tidegate/config.toml", '[containment]\nmode = "none"\n')  # VERIFY may write
    appear = tmp_path / "appear.py"
    appear.write_text(f"open({str(repo.root / 'notes.txt')!r}, 'wb').write({MINE!r})\n")

    res = cli(
        "run", "--objective", CREATE.format(path="notes.txt"), "--json",
        "--verify", f"{sys.executable} {appear}", cwd=repo.root,
    )  # fmt: skip

    report = report_of(res)
    assert res.returncode == 3, report["message"]
    assert "you created this path since the run started" in report["message"]
    assert (repo.root / "notes.txt").read_bytes() == MINE
