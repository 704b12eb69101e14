"""Attack: links planted in the work tree's ``.tidegate/`` where a conflict's ``.rej``
files go, by the repository itself or by the verify command of the very run.

The verify command (uncontained here, so it can reach the work tree) learns the run's id
from its registration (``live/<run-id>.lock``), makes the conflict (it edits the file the change touches) and plants,
in ``.tidegate/rejects/<run-id>/``: a hard link to a file outside at the temporary name
the ``.rej`` is written to first, and a symlink to another outside file at the ``.rej``'s
own name. A repository can also ship ``.tidegate/rejects`` as a symlink. The conflict is
still a conflict (exit 3), the rejects are written as regular files, and neither outside
file changes.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli, report_of
from tests.conftest import Repo

OUTSIDE = b"a file outside the repository\n"
OBJECTIVE = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"

PLANT = """
import json, os, sys
root, outside = sys.argv[1], sys.argv[2]
with open(os.path.join(root, "calc.py"), "w") as fh:  # the user's edit: a conflict
    fh.write("yours\\n")
live = os.path.join(root, ".git", "tidegate", "live")
(name,) = [n for n in os.listdir(live) if n.endswith(".lock") and not n.startswith(".")]
with open(os.path.join(live, name)) as fh:
    run_id = json.load(fh)["run_id"]
rejects = os.path.join(root, ".tidegate", "rejects", run_id)
if not os.path.islink(os.path.join(root, ".tidegate", "rejects")):
    os.makedirs(rejects, exist_ok=True)
    os.link(os.path.join(outside, "hard"), os.path.join(rejects, ".tidegate-tmp-rej"))
    os.symlink(os.path.join(outside, "soft"), os.path.join(rejects, "calc.py.rej"))
"""


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    for name in ("hard", "soft"):
        (out / name).write_bytes(OUTSIDE)
    return out


def _outside_state(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("shape", ["planted-by-verify", "rejects-dir-linked"])
def test_rejects_are_never_written_through_planted_links(
    committed_repo: Repo, tmp_path: Path, outside: Path, shape: str
) -> None:
    repo = committed_repo
    if shape == "rejects-dir-linked":
        (repo.root / ".tidegate").mkdir()
        (repo.root / ".tidegate" / "rejects").symlink_to(outside)
    else:
        (repo.root / ".tidegate" / "rejects").mkdir(parents=True)
    script = tmp_path / "plant.py"
    script.write_text(PLANT)
    verify = shlex.join([sys.executable, str(script), str(repo.root), str(outside)])
    before = _outside_state(outside)

    res = cli(
        "run",
        "--objective",
        OBJECTIVE,
        "--verify",
        verify,
        "--containment",
        "none",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 3, (report["error_class"], report["message"])
    assert report["status"] == "conflict"
    assert _outside_state(outside) == before
    assert (repo.root / "calc.py").read_bytes() == b"yours\n"
    assert report["rejects"]
    for rej in report["rejects"]:
        path = Path(rej) if os.path.isabs(rej) else repo.root / rej
        assert path.is_file() and not path.is_symlink(), rej
        assert path.read_bytes().startswith(b"# tidegate could not apply this change")
