"""Owned temporary directories on a real temp dir: only a real directory with the
prefix and a dead owner's record is removed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tidegate.workspace.claims import OWNER_FILE, directory_owner, process_start
from tidegate.workspace.owned_temp import (
    AGENT_PREFIX,
    SUBAGENT_PREFIX,
    make_owned_temp,
    remove_dead_owned,
)


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    return tmp_path


def test_a_copy_records_this_process_and_is_kept_while_it_lives(tmpdir_env: Path) -> None:
    copy = make_owned_temp(SUBAGENT_PREFIX)
    assert copy.parent == tmpdir_env and copy.name.startswith(SUBAGENT_PREFIX)
    owner = directory_owner(copy)
    assert owner is not None and owner.pid == os.getpid() and owner.alive
    assert remove_dead_owned() == [] and copy.is_dir()


@pytest.mark.parametrize("prefix", [SUBAGENT_PREFIX, AGENT_PREFIX])
def test_a_reused_pid_is_a_dead_owner(tmpdir_env: Path, prefix: str) -> None:
    copy = make_owned_temp(prefix)
    (copy / "ws" / "ro").mkdir(parents=True)
    (copy / "ws" / "ro").chmod(0o500)  # what a sub-agent may leave read-only
    start = str(int(process_start(os.getpid()) or "0") + 1)  # this pid, a younger process
    (copy / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "start": start}))
    assert remove_dead_owned() == [str(copy)]
    assert not copy.exists()


def test_no_record_a_file_or_another_prefix_is_left_alone(tmpdir_env: Path) -> None:
    unmarked = tmpdir_env / f"{SUBAGENT_PREFIX}unmarked"
    unmarked.mkdir()  # its owner may be between making and marking it
    afile = tmpdir_env / f"{SUBAGENT_PREFIX}file"
    afile.write_text("x")
    other = tmpdir_env / "tidegate-other-x"
    other.mkdir()
    (other / OWNER_FILE).write_text('{"pid": 999999999, "start": "1"}')
    assert remove_dead_owned() == []
    assert unmarked.is_dir() and afile.is_file() and other.is_dir()
