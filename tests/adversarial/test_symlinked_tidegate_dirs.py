"""Attack: the places tidegate itself writes, planted as symlinks out of the repository.

``.git/info/exclude`` (or ``.git/info``) pointing at a file elsewhere, and ``.tidegate``
pointing at a directory elsewhere. tidegate never writes through them, in review mode
neither: the exclude line is skipped, and rejects go under the git directory instead.
A conflict in that situation is still a conflict (exit 3), not an internal error.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli, report_of
from tests.conftest import Repo

OUTSIDE_EXCLUDE = b"# a file outside the repository\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "exclude").write_bytes(OUTSIDE_EXCLUDE)
    (out / "tdir").mkdir()
    (out / "tdir" / "keep.txt").write_bytes(b"outside\n")
    return out


def _outside_state(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _plant(repo: Repo, out: Path, what: str) -> None:
    info = repo.root / ".git" / "info"
    if what in ("exclude", "both"):
        (info / "exclude").unlink(missing_ok=True)
        os.symlink(out / "exclude", info / "exclude")
    if what == "info-dir":
        for child in info.iterdir():
            child.unlink()
        info.rmdir()
        os.symlink(out, info)
    if what in ("tidegate", "both"):
        os.symlink(out / "tdir", repo.root / ".tidegate")


@pytest.mark.parametrize("what", ["exclude", "info-dir", "tidegate", "both"])
@pytest.mark.parametrize("command", ["review", "run"])
def test_nothing_is_written_through_the_symlinks(
    committed_repo: Repo, outside: Path, what: str, command: str
) -> None:
    repo = committed_repo
    _plant(repo, outside, what)
    before_outside = _outside_state(outside)
    index = repo.index_bytes()
    args = ["--objective", "edit-file: README.md\nreplace: # calc\nwith: # calc!\n"]

    res = cli(command, *args, "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 0, report["message"]
    assert _outside_state(outside) == before_outside
    assert repo.index_bytes() == index
    if command == "run":
        assert repo.read("README.md") == "# calc!\n"
    skipped = [n for n in report["notes"] if "info/exclude" in n]
    assert bool(skipped) == (what != "tidegate"), report["notes"]


@pytest.mark.parametrize("what", ["tidegate", "both"])
def test_conflict_with_a_symlinked_tidegate_dir_still_exits_3(
    committed_repo: Repo, outside: Path, what: str
) -> None:
    repo = committed_repo
    _plant(repo, outside, what)
    before_outside = _outside_state(outside)
    target = repo.root / "calc.py"
    index = repo.index_bytes()

    res = cli(
        "run",
        "--objective",
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        "--verify",
        f"printf 'yours\\n' > {shlex.quote(str(target))}",
        "--containment",
        "none",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 3, (report["error_class"], report["message"])
    assert report["status"] == "conflict"
    assert target.read_bytes() == b"yours\n"
    assert _outside_state(outside) == before_outside
    assert report["rejects"], report
    git_dir = repo.root / ".git"
    for rej in report["rejects"]:
        assert Path(rej).is_file() and Path(rej).resolve().is_relative_to(git_dir.resolve())
    assert any(".tidegate" in note for note in report["notes"]), report["notes"]
    assert repo.index_bytes() == index
