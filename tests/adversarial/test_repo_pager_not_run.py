"""A repository's ``core.pager`` is never run: whoever wrote the repository (a cloned
project, an agent's commit to ``.git/config``) could have put any command there. Only the
user's own pager is: ``TIDEGATE_PAGER``, ``GIT_PAGER``, their global ``core.pager``,
``PAGER``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.e2e._landing import dirty, held

__all__ = ["dirty"]


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a terminal")
def test_a_repository_core_pager_is_not_run(dirty: Repo, tmp_path: Path) -> None:
    held(dirty)
    planted = tmp_path / "pwned"
    dirty.git("config", "core.pager", f"touch {shlex.quote(str(planted))}; cat")
    mine = tmp_path / "global.gitconfig"
    mine.write_text("[core]\n\tpager = sed s/^/MINE:/\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_PAGER", "TIDEGATE_PAGER")}
    env.update(GIT_CONFIG_GLOBAL=str(mine), TERM="xterm", PAGER="more")
    command = f"{shlex.quote(sys.executable)} -m tidegate diff --stat"

    res = subprocess.run(
        ["script", "-qc", command, "/dev/null"],
        cwd=dirty.root, env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip

    assert res.returncode == 0, res.stderr
    assert not planted.exists()
    assert res.stdout.splitlines()[0].rstrip("\r") == "MINE: README.md |    2 +-"
