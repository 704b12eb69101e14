"""``run --review`` and ``apply --review`` on a real pseudo-terminal: each file's diff through
the pager, a question per file, the chosen files landed (a subset verified again first),
the rest left held; on a repository with staged, unstaged and untracked work whose other
files and ``.git/index`` must come through byte for byte."""

from __future__ import annotations

import re
import sys

from tests._terminal import on_a_terminal
from tests.conftest import CALC, Repo, tidegate_cli
from tests.e2e._landing import CHECK, FIX, dirty, files_but, held, outside_refs
from tests.integration._store import cli

__all__ = ["dirty"]  # the fixture

TIDEGATE = [sys.executable, "-m", "tidegate"]
RUN = [*TIDEGATE, "run", "--review", "--objective", FIX, "--verify", CHECK]
PROMPT = b"[y,n,a,d,q,?]? "
PAGED: dict[str, str | None] = {"TIDEGATE_PAGER": "sed s/^/PAGED:/", "TERM": "xterm"}
FIXED = CALC.replace("return a - b", "return a + b")


def _asked(argv: list[str], repo: Repo, *answers: bytes) -> str:
    shown = on_a_terminal(argv, repo.root, 100, env=PAGED, prompt=PROMPT, answers=answers)
    text = shown.decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # the styles: not what is tested


def _statuses(repo: Repo) -> list[tuple[str, str, str | None]]:
    _, rows, _ = cli("runs", cwd=repo.root)
    assert isinstance(rows, list)
    return [(r["run_id"], r["status"], r["landing"]) for r in rows]


def test_run_review_lands_the_chosen_file_after_verifying_it_alone(dirty: Repo) -> None:
    before, refs = files_but(dirty, "calc.py"), outside_refs(dirty)
    readme = dirty.read("README.md")

    shown = _asked(RUN, dirty, b"n\n", b"y\n")

    # each file's diff went through the pager before its question, README.md first
    assert "PAGED:+# calc (fixed)" in shown and "PAGED:+    return a + b" in shown
    assert shown.index("(1/2) Land this change to README.md") < shown.index("PAGED:+    return")
    assert "(2/2) Land this change to calc.py" in shown
    assert "a subset was never verified on its own, so it is verified again" in shown
    assert dirty.read("calc.py") == FIXED and dirty.read("README.md") == readme
    assert files_but(dirty, "calc.py") == before  # staged, unstaged, untracked, the index
    assert outside_refs(dirty) == refs
    rows = _statuses(dirty)
    assert rows[0][1] == "succeeded" and rows[1][1:] == ("held", "applied")


def test_apply_review_all_remaining_is_a_plain_apply(dirty: Repo) -> None:
    run_id = held(dirty)
    before = files_but(dirty, "calc.py", "README.md")

    shown = _asked([*TIDEGATE, "apply", "--review"], dirty, b"?\n", b"a\n")

    assert "q - stop: land nothing, the run stays held" in shown  # the help, then asked again
    assert shown.count("(1/2) Land this change to README.md") == 2
    assert "(2/2)" not in shown and "verified again" not in shown
    assert dirty.read("calc.py") == FIXED
    assert dirty.read("README.md") == "# calc (fixed)\n\nunstaged notes\n"  # merged
    assert files_but(dirty, "calc.py", "README.md") == before
    assert _statuses(dirty) == [(run_id, "held", "applied")]


def test_stopping_or_choosing_nothing_changes_nothing_and_keeps_the_run_held(
    dirty: Repo,
) -> None:
    run_id = held(dirty)
    before = dirty.tree_state(with_mtimes=True)

    stopped = _asked([*TIDEGATE, "apply", "--review", run_id], dirty, b"y\n", b"q\n")
    none = _asked([*TIDEGATE, "apply", "--review"], dirty, b"d\n")
    ended = _asked([*TIDEGATE, "apply", "--review"], dirty, b"y\n", b"\x04")  # Ctrl-D

    assert f"stopped: run {run_id} stays held; `tidegate apply {run_id}` lands it" in stopped
    assert f"nothing chosen: run {run_id} stays held" in none
    assert f"stopped: run {run_id} stays held" in ended  # the end of input stops too
    assert f"`tidegate discard {run_id}` drops it" in none
    assert dirty.tree_state(with_mtimes=True) == before
    assert _statuses(dirty) == [(run_id, "held", None)]


def test_review_without_a_terminal_is_refused_before_any_work(dirty: Repo) -> None:
    before = dirty.tree_state(with_mtimes=True)
    refused = tidegate_cli(*RUN[3:], cwd=dirty.root, input="")
    typer_path = tidegate_cli(*RUN[3:], "--verify-timeout", "1e2", cwd=dirty.root, input="")
    for shown in (refused, typer_path):
        assert shown.returncode == 2 and shown.stdout == ""
        assert shown.stderr.splitlines() == [
            "tidegate: error: --review asks on the terminal, and standard input is not one "
            "(use --hold, then `tidegate apply --only PATH`)"
        ]
    assert _statuses(dirty) == []  # no run was started
    assert dirty.tree_state(with_mtimes=True) == before
    run_id = held(dirty)
    before = dirty.tree_state(with_mtimes=True)
    shown = tidegate_cli("apply", "--review", cwd=dirty.root, input="")
    assert shown.returncode == 2 and len(shown.stderr.splitlines()) == 1
    both = tidegate_cli("apply", "--review", "--only", "calc.py", cwd=dirty.root)
    assert both.returncode == 2 and "not with --only/--exclude" in both.stderr
    assert dirty.tree_state(with_mtimes=True) == before
    assert _statuses(dirty) == [(run_id, "held", None)]
