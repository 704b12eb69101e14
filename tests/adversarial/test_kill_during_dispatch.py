"""A process killed while its sub-agent's private copy exists: a real dispatch (scripted
models, a real repository) in a child process, SIGKILLed by a fault point right after the
copy is made, leaves ``tidegate-subagent-*`` in TMPDIR; ``tidegate recover`` removes it,
since the owner recorded inside it is dead. A dispatch that is alive keeps its copy
through a recover, and a symlink planted at such a name is not followed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import Repo
from tests.integration._store import cli
from tidegate.workspace.claims import OWNER_FILE

PROJECT = Path(__file__).resolve().parents[2]
DISPATCH = """\
import sys
from pathlib import Path
sys.path.insert(0, {project!r})
from tests.adversarial._dispatch import dispatch_turn, editing, host, parent
from tests.conformance._agent import answer, scripted
from tidegate.agent import run_loop
from tidegate.agent.dispatch import SubAgentDispatch

tool = SubAgentDispatch(editing(model=scripted(answer("done"))))
with host(Path(sys.argv[1]), Path(sys.argv[2])) as ex:
    print(run_loop(parent(scripted(dispatch_turn(), answer("ok")), ex, tool, phase="AGENT")).status)
"""


def _dispatch(repo: Repo, tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    script = tmp_path / "dispatch_once.py"
    script.write_text(DISPATCH.format(project=str(PROJECT)))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, str(script), str(repo.root), str(tmp_path)],
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp"), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _copies(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("tidegate-subagent-*"))


def _recover(repo: Repo, tmp_path: Path) -> dict[str, object]:
    code, summary, err = cli("recover", cwd=repo.root, env={"TMPDIR": str(tmp_path / "tmp")})
    assert code == 0 and isinstance(summary, dict), err
    return summary


def test_sigkill_mid_dispatch_leaves_a_copy_recover_removes(
    committed_repo: Repo, tmp_path: Path
) -> None:
    proc = _dispatch(committed_repo, tmp_path, TIDEGATE_FAULT="dispatch.copy_made")
    _out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err
    [copy] = _copies(tmp_path)
    assert (copy / OWNER_FILE).is_file() and (copy / "ws").is_dir()
    summary = _recover(committed_repo, tmp_path)
    assert summary["removed_copies"] == [str(copy)]
    assert _copies(tmp_path) == []


def test_a_live_dispatch_keeps_its_copy_and_a_planted_symlink_is_not_followed(
    committed_repo: Repo, tmp_path: Path
) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's\n")
    (outside / OWNER_FILE).write_text('{"pid": 999999999, "start": "1"}')  # a dead owner
    (tmp_path / "tmp").mkdir()
    planted = tmp_path / "tmp" / "tidegate-subagent-planted"
    planted.symlink_to(outside)
    # The fault point holds the dispatch, its copy made, until the test lets it go.
    wait = f"touch {ready}; while [ ! -e {go} ]; do sleep 0.05; done"
    proc = _dispatch(
        committed_repo,
        tmp_path,
        TIDEGATE_FAULT="dispatch.copy_made=run",
        TIDEGATE_FAULT_RUN=wait,
    )
    try:
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        [copy] = [c for c in _copies(tmp_path) if c != planted]
        summary = _recover(committed_repo, tmp_path)
        assert summary["removed_copies"] == []
        assert (copy / "ws").is_dir()  # the live dispatch's copy is untouched
    finally:
        go.touch()
        out, err = proc.communicate()
    assert proc.returncode == 0 and out.strip() == "completed", err
    assert not copy.exists()  # the dispatch removed it on its way out
    assert planted.is_symlink() and (outside / "keep.txt").read_text() == "the user's\n"
    assert (outside / OWNER_FILE).exists()


def test_recover_says_what_it_removed_in_text_mode_too(
    committed_repo: Repo, tmp_path: Path
) -> None:
    proc = _dispatch(committed_repo, tmp_path, TIDEGATE_FAULT="dispatch.copy_made")
    proc.communicate()
    [copy] = _copies(tmp_path)
    shown = subprocess.run(
        [sys.executable, "-m", "tidegate", "recover"],
        cwd=committed_repo.root,
        env={**os.environ, "TIDEGATE_FAULT": "", "TMPDIR": str(tmp_path / "tmp")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"removed a dead sub-agent's copy {copy}" in shown.stdout
    assert "nothing to recover" not in shown.stdout
