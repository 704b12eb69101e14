"""Undo covers the tool host (issue #25): the bytes every tool call replaces or deletes are
kept in the state root, and ``tidegate undo --call ID`` / ``--session ID`` restore them
three-way, on real repositories with staged, unstaged and untracked work; the index is
byte-identical throughout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment, tidegate_cli
from tests.integration.tools.support import call, executor
from tests.integration.tools.undo_support import (
    UNDO,
    dirty,
    last_call,
    repo_dir,
    sessions,
    sha,
    tools_call,
    undo,
)
from tidegate.store.blobs import ByteStore
from tidegate.tools.undo import undo_calls
from tidegate.tools.undo_keep import CallKeeper
from tidegate.workspace.secret_files import SecretFiles

LINES = "".join(f"line {i}\n" for i in range(1, 11))


@requires_containment
def test_a_command_that_overwrites_uncommitted_work_is_undone_byte_for_byte(
    committed_repo: Repo,
) -> None:
    repo = committed_repo
    dirty(repo)
    before = repo.tree_state()
    tools_call(
        repo, "command.run", command="echo clobbered > calc.py; rm notes.txt; echo x > made.txt"
    )
    assert repo.read("calc.py") == "clobbered\n" and not (repo.root / "notes.txt").exists()
    assert repo.tree_state()["<index>"] == before["<index>"]
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 0, proc.stderr
    assert "restored  calc.py" in proc.stdout and "removed   made.txt" in proc.stdout
    assert repo.tree_state() == before  # every byte, every mode, and .git/index
    again = undo(repo, "--call", last_call())
    assert again.returncode == 2 and "already undone" in again.stderr


@requires_containment
def test_a_deleted_file_comes_back_with_its_mode(committed_repo: Repo) -> None:
    repo = committed_repo
    repo.write("run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    before = repo.tree_state()
    tools_call(repo, "command.run", command="rm run.sh")
    assert not (repo.root / "run.sh").exists()
    proc = undo(repo, "--session", "latest")
    assert proc.returncode == 0, proc.stderr
    assert repo.tree_state() == before
    assert (repo.root / "run.sh").stat().st_mode & 0o777 == 0o755


@requires_containment
def test_under_the_inventory_capture_only_what_git_holds_can_be_restored(
    committed_repo: Repo,
) -> None:
    """The exact inventory sees hashes only: a clean tracked file's bytes come from git's
    index (checked against the observed hash); an uncommitted file's are not kept, and its
    undo is refused without changing anything."""
    repo = committed_repo
    dirty(repo)
    before = repo.tree_state()
    forced = {"TIDEGATE_EFFECT_CAPTURE": "inventory"}
    tools_call(repo, "command.run", env=forced, command="echo x > README.md")
    tools_call(repo, "command.run", env=forced, command="echo x > calc.py")
    [readme] = sessions()[-2]["calls"][0]["paths"]
    [calc] = sessions()[-1]["calls"][0]["paths"]
    assert readme["before"]["kept"] == readme["before"]["sha256"]
    assert "inventory capture saw only its hash" in calc["before"]["not_kept"]
    refused = undo(repo, "--call", last_call())
    assert refused.returncode == 3 and "cannot restore" in refused.stdout
    (repo.root / "calc.py.rej").unlink()
    assert repo.read("calc.py") == "x\n"
    repo.write("calc.py", before["calc.py"][1])  # type: ignore[index]
    proc = undo(repo, "--call", f"{sessions()[-2]['session']}:cli-1")
    assert proc.returncode == 0, proc.stderr
    assert repo.tree_state() == before


def _write_line_two(repo: Repo) -> None:
    data = (repo.root / "lines.txt").read_bytes()
    tools_call(
        repo,
        "workspace.write",
        path="lines.txt",
        content=LINES.replace("line 2\n", "TOOL 2\n"),
        expect=sha(data),
    )


def test_a_write_undone_after_an_edit_elsewhere_keeps_the_edit(committed_repo: Repo) -> None:
    repo = committed_repo
    dirty(repo)
    repo.write("lines.txt", LINES)
    index = repo.index_bytes()
    _write_line_two(repo)
    repo.write("lines.txt", repo.read("lines.txt").replace("line 9\n", "USER 9\n"))
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 0, proc.stderr
    assert "merged    lines.txt" in proc.stdout
    assert repo.read("lines.txt") == LINES.replace("line 9\n", "USER 9\n")
    assert repo.index_bytes() == index


def test_an_undo_that_conflicts_changes_nothing_and_writes_a_rej(committed_repo: Repo) -> None:
    repo = committed_repo
    dirty(repo)
    repo.write("lines.txt", LINES)
    _write_line_two(repo)
    repo.write("lines.txt", repo.read("lines.txt").replace("TOOL 2\n", "USER 2\n"))
    before = repo.tree_state()
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "nothing changed" in proc.stdout
    rej = repo.root / "lines.txt.rej"
    assert "-TOOL 2" in rej.read_text() and "+line 2" in rej.read_text()
    rej.unlink()
    assert repo.tree_state() == before  # nothing else changed, the index included
    assert not sessions()[-1]["calls"][-1].get("undone")  # still undoable


def test_a_secret_shaped_file_is_withheld_from_the_store(committed_repo: Repo) -> None:
    repo = committed_repo
    secret = b'{"token": "do-not-keep-me"}\n'
    repo.write("secrets.json", secret)
    tools_call(repo, "workspace.write", path="secrets.json", content="{}\n", expect=sha(secret))
    [entry] = sessions()[-1]["calls"][-1]["paths"]
    assert "secret-shaped" in entry["withheld"] and "kept" not in entry["before"]
    blobs = [p.read_bytes() for p in (repo_dir() / "blobs").rglob("*") if p.is_file()]
    assert secret not in blobs and b"{}\n" not in blobs
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 0 and "skipped   secrets.json" in proc.stdout
    assert repo.read("secrets.json") == "{}\n"


@requires_containment
def test_a_session_is_undone_newest_call_first(committed_repo: Repo, tmp_path: Path) -> None:
    repo = committed_repo
    dirty(repo)
    before = repo.tree_state()
    (tmp_path / "store").mkdir()
    store = ByteStore(tmp_path / "store")
    with executor(repo.root, activate_all=True) as ex:
        ex.keep_bytes(CallKeeper(store, "s1", repo.root, SecretFiles()))
        first = sha((repo.root / "calc.py").read_bytes())
        assert ex.execute(call("workspace_write", path="calc.py", content="one\n", expect=first)).ok
        assert ex.execute(call("command_run", command="echo two >> calc.py; rm staged.txt")).ok
        assert ex.execute(call("command_run", command="echo three > new.txt")).ok
        assert ex.keep_failures == []
    assert [c["tool"] for c in store.session("s1")["calls"]] == [
        "workspace.write",
        "command.run",
        "command.run",
    ]
    report = undo_calls(store, repo.root, session_id="s1")
    assert report.applied, report
    assert repo.tree_state() == before
    assert all(
        c["undone"] for c in json.loads((tmp_path / "store/undo/s1.json").read_text())["calls"]
    )


@requires_containment
@pytest.mark.parametrize("point", ["apply_back.before_write:2", "apply_back.after_write:1"])
def test_an_undo_killed_between_writes_is_finished_by_recover(
    committed_repo: Repo, point: str
) -> None:
    repo = committed_repo
    dirty(repo)
    before = repo.tree_state()
    tools_call(repo, "command.run", command="echo a > calc.py; echo b > staged.txt; rm notes.txt")
    killed = tidegate_cli(
        *UNDO, "--call", last_call(), cwd=repo.root, env={"TIDEGATE_FAULT": point}
    )
    assert killed.returncode == -9, (killed.stdout, killed.stderr)
    assert list((repo.root / ".git" / "tidegate" / "journal").iterdir())  # left for recover
    assert repo.tree_state() != before
    refused = undo(repo, "--call", last_call())
    assert refused.returncode == 2 and "run `tidegate recover`" in refused.stderr
    recovered = tidegate_cli("recover", cwd=repo.root)
    assert recovered.returncode == 0, recovered.stderr
    assert repo.tree_state() == before
    assert undo(repo, "--call", last_call()).returncode == 0  # the record: still to mark
    assert repo.tree_state() == before


@requires_containment
def test_a_write_that_fails_rolls_the_undo_back(committed_repo: Repo) -> None:
    repo = committed_repo
    dirty(repo)
    tools_call(repo, "command.run", command="echo a > calc.py; echo b > staged.txt")
    after = repo.tree_state()
    failed = tidegate_cli(
        *UNDO,
        "--call",
        last_call(),
        cwd=repo.root,
        env={"TIDEGATE_FAULT": "apply_back.before_write:2=ENOSPC"},
    )
    assert failed.returncode == 2 and "nothing was applied" in failed.stderr, failed.stderr
    assert repo.tree_state() == after
    assert not sessions()[-1]["calls"][-1].get("undone")


@requires_containment
def test_a_mode_the_command_changed_is_put_back(committed_repo: Repo) -> None:
    repo = committed_repo
    repo.write("tool.sh", "echo hi\n", mode=0o644)
    before = repo.tree_state()
    tools_call(repo, "command.run", command="chmod 755 tool.sh")
    assert (repo.root / "tool.sh").stat().st_mode & 0o777 == 0o755
    proc = undo(repo, "--session", "latest")
    assert proc.returncode == 0, proc.stderr
    assert repo.tree_state() == before


def test_a_run_and_a_call_are_not_undone_together(committed_repo: Repo) -> None:
    for args in (("some-run", "--call", "cli-1"), ("--last", "1", "--session", "latest")):
        proc = undo(committed_repo, *args)
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            "tidegate: error: undo: give a run id, --last N, or --call/--session, not several"
        ]
