"""Attack: a link planted at the repository's landing lock, ``<git dir>/tidegate/
apply.lock``, at the directory of the runs' own locks (``live/``), or at the runtime
directory itself (an uncontained command of an earlier run could plant any of them).

Lock files are truncated and rewritten with their holder's record, so a followed link
would overwrite the file it points at. The run is refused in one line before anything
else happens, and the file or directory the link points at is untouched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli
from tests.conftest import Repo

EDIT = "edit-file: README.md\nreplace: # calc\nwith: # calc!\n"
VICTIM = b"a file outside the repository\n"


@pytest.mark.parametrize("planted", ["apply.lock", "live", "runtime-dir"])
def test_a_linked_run_lock_is_refused_and_not_written_through(
    committed_repo: Repo, tmp_path: Path, planted: str
) -> None:
    repo = committed_repo
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "apply.lock").write_bytes(VICTIM)
    runtime = repo.root / ".git" / "tidegate"
    if planted != "runtime-dir":
        runtime.mkdir()
        (runtime / planted).symlink_to(
            outside / "apply.lock" if planted == "apply.lock" else outside
        )
        refused = runtime / planted
    else:
        runtime.symlink_to(outside)
        refused = runtime
    before = {p.name: p.read_bytes() for p in outside.iterdir()}

    res = cli("run", "--objective", EDIT, "--json", cwd=repo.root)

    err = res.stderr.decode()
    assert res.returncode == 2, (res.returncode, err)
    assert err == f"tidegate: error: {refused}: a symlink; not followed\n"
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    assert repo.read("README.md") == "# calc\n"
