"""Attack: a link planted at the name of a command's output spill file.

The runner spills each stream to ``<spill dir>/<label>.stdout`` and ``.stderr``; a spill
directory is reused across attempts and calls, and a command (an earlier attempt's, or a
tool's) may have planted a link at the next spill's name. The runner must replace it,
never write through it: the file the link points at keeps its bytes, and the command's
output is still captured.

Today the runner opens the name with ``O_NOFOLLOW`` and truncates what it finds: a
symlink makes the command fail (an ``OSError``, though nothing outside is written), and a
hard link to a file elsewhere has that file truncated and overwritten. Both pass once the
runner opens its spill files with ``tidegate.disk.linksafe.fresh_file``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command

VICTIM = b"a file outside the spill directory\n"


@pytest.mark.parametrize(
    ("planted", "stream"),
    [
        pytest.param(planted, stream, id=f"{planted}-{stream}")
        for planted in ("symlink", "hardlink")
        for stream in ("stdout", "stderr")
    ],
)
def test_a_link_at_a_spill_name_is_not_written_through(
    tmp_path: Path, planted: str, stream: str
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    spill = tmp_path / "spill"
    spill.mkdir()
    name = spill / f"check.{stream}"
    if planted == "symlink":
        name.symlink_to(victim)
    else:
        os.link(victim, name)

    try:
        result = run_command(
            ["/bin/sh", "-c", "echo out; echo err >&2"],
            tmp_path,
            30,
            spill,
            label="check",
            clearance=Clearance.user(),
        )
    finally:
        assert victim.read_bytes() == VICTIM  # whatever happens, nothing outside is written

    assert result.exit_code == 0
    assert not name.is_symlink() and name.stat().st_ino != victim.stat().st_ino
    assert result.stdout_file.read_bytes() == b"out\n"
    assert result.stderr_file.read_bytes() == b"err\n"
