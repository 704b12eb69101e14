"""Terminal sessions through the CLI: run, file, recipes, read, and their refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.e2e._operator import EDIT, op

SP = "single-process"
SESSION = (
    "command: printf 'alpha\\n'; printf 'beta %s\\n' $((2*21))\n"
    "wait-for: beta 42\n"
    "command: python3 -c 'print(input(\"name? \").upper())'\n"
    "wait-for: name?\n"
    "input: tidegate\n"
    "wait-for: TIDEGATE\n"
    "expect: alpha\n"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_a_session_runs_its_steps_in_order_and_the_read_shows_the_same_audit(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    res = op(
        capsys, "engineer", "terminal", SP, SESSION, str(root), "--cwd", str(tmp_path), "--json"
    )
    assert res.code == 0, res.err + res.out
    run = res.json()
    assert run["outcome"] == "success"
    assert run["selection"]["implementation"] == "terminal-shell::local-pty"
    assert [s["status"] for s in run["steps"]] == [
        "sent", "satisfied", "sent", "satisfied", "sent", "satisfied", "met",
    ]  # fmt: skip
    assert run["checkpoints"] == ["beta 42", "name?", "TIDEGATE", "alpha"]
    assert run["last_output_line"] == "name? TIDEGATE"  # the input is not echoed
    assert run["counts"] == {
        "command": 2,
        "input": 1,
        "key": 0,
        "wait-for": 3,
        "expect": 1,
        "timeout": 0,
    }
    read = op(capsys, "engineer", "terminal-read", SP, str(root), "--json").json()
    assert read["audit"]["steps"] == run["steps"]
    assert read["audit"]["checkpoints"] == run["checkpoints"]
    assert read["transcript"]["last_output_line"] == run["last_output_line"]
    assert read["shell"] == run["shell"]
    assert read["handoff"]["file"] == "latest_terminal_handoff.json"
    assert list(read)[1:] == [
        "selection", "handoff", "adapter", "shell", "audit", "transcript", "next_step", "records",
    ]  # fmt: skip
    transcript = root / "terminal_transcripts" / read["transcript"]["file"]
    assert b"TIDEGATE" in transcript.read_bytes()
    text = op(capsys, "engineer", "terminal-read", SP, str(root)).out
    assert "TIDEGATE" in text and "engineer run" in text  # the continuation guidance


def test_an_unsatisfied_wait_fails_there_and_runs_nothing_after_it(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "after"
    objective = f"command: echo one\nwait-for: two\ncommand: touch {marker}\n"
    env_before = os.environ.copy()
    res = op(
        capsys, "engineer", "terminal", SP, objective, str(root), "--cwd", str(tmp_path), "--json"
    )
    assert res.code == 1
    view = res.json()
    assert view["outcome"] == "failed" and "line 2" in view["failure"]
    assert [s["status"] for s in view["steps"]] == ["sent", "unsatisfied", "not-reached"]
    assert not marker.exists()
    assert os.environ == env_before
    handoff = json.loads((root / "latest_terminal_handoff.json").read_text())
    assert handoff["session_phase"] == "failed"


def test_recipes_list_show_and_run(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    listed = op(capsys, "engineer", "terminal-recipe-list", "--json").json()
    assert "foundation-check" in listed["recipes"]
    shown = op(capsys, "engineer", "terminal-recipe-show", "foundation-check")
    assert shown.code == 0 and "wait-for: tidegate-foundation 42" in shown.out
    res = op(
        capsys,
        "engineer",
        "terminal-recipe",
        SP,
        "foundation-check",
        str(root),
        "--cwd",
        str(tmp_path),
        "--json",
    )
    assert res.code == 0, res.out
    assert res.json()["recipe"] == "foundation-check"
    assert op(capsys, "engineer", "terminal-read", SP, str(root), "--json").json()["adapter"][
        "recipe"
    ] == ("foundation-check")


@pytest.mark.parametrize(
    "name", ["../etc/passwd", "Foundation-Check", "foundation_check", "nope", "-x"]
)
def test_bad_recipe_names_are_refused(
    capsys: pytest.CaptureFixture[str], name: str, root: Path
) -> None:
    for args in (("terminal-recipe-show", name), ("terminal-recipe", SP, name, str(root))):
        res = op(capsys, "engineer", *args)
        assert res.code == 2, res.out
        assert res.err.count("\n") == 1
    assert not root.exists()


@pytest.mark.parametrize("kind", ["symlink", "directory", "binary", "missing"])
def test_terminal_file_takes_only_a_utf8_regular_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, kind: str
) -> None:
    real = tmp_path / "real.txt"
    real.write_text("command: echo hi\n")
    target = {
        "symlink": tmp_path / "link.txt",
        "directory": tmp_path,
        "binary": tmp_path / "bin.txt",
        "missing": tmp_path / "missing.txt",
    }[kind]
    (tmp_path / "link.txt").symlink_to(real)
    (tmp_path / "bin.txt").write_bytes(b"command: echo \xff\xfe\n")
    res = op(capsys, "engineer", "terminal-file", SP, str(target), str(root))
    assert res.code == 2
    assert res.err.count("\n") == 1 and str(target.name) in res.err
    assert not root.exists()
    ok = op(capsys, "engineer", "terminal-file", SP, str(real), str(root), "--cwd", str(tmp_path))
    assert ok.code == 0, ok.out


@pytest.mark.parametrize(
    "objective",
    ["echo hi", "wait-for: x", "command: echo hi\nsend: y", "command:", "command: a\rb"],
)
def test_malformed_terminal_objectives_are_refused(
    capsys: pytest.CaptureFixture[str], root: Path, objective: str
) -> None:
    res = op(capsys, "engineer", "terminal", SP, objective, str(root))
    assert res.code == 2 and res.err.count("\n") == 1
    assert not root.exists()


def test_terminal_continuity_reaches_engineer_surfaces_as_context_only(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, root: Path, tmp_path: Path
) -> None:
    res = op(
        capsys,
        "engineer",
        "terminal",
        SP,
        "command: echo \x1b[2Jfrom-terminal\nwait-for: from-terminal",
        str(root),
        "--cwd",
        str(tmp_path),
    )
    assert res.code == 0, res.out
    run = op(
        capsys, "engineer", "run", SP, str(committed_repo.root), EDIT, str(root), "--json"
    ).json()
    assert run["terminal_continuity"]["status"] == "valid"
    assert run["terminal_continuity"]["last_output_line"].endswith("from-terminal")
    read = op(capsys, "engineer", "read", SP, str(root), "--json").json()
    assert read["terminal_continuity"]["working_directory"] == str(tmp_path)
    # A malformed terminal handoff fails the read (fail-closed), never silently ignored.
    (root / "latest_terminal_handoff.json").write_text("{}")
    assert op(capsys, "engineer", "read", SP, str(root)).code == 1
    assert op(capsys, "engineer", "terminal-read", SP, str(root)).code == 1


def test_a_wait_for_is_not_satisfied_by_the_first_of_two_identical_lines(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    objective = (
        "command: echo 'half done'; sleep 3; echo 'half done'; touch finished\n"
        "wait-for: half done\n"
        "wait-for: half done\n"
    )
    res = op(
        capsys, "engineer", "terminal", SP, objective, str(root), "--cwd", str(tmp_path), "--json"
    )
    assert res.code == 0, res.out
    steps = res.json()["steps"]
    assert [s["status"] for s in steps] == ["sent", "satisfied", "satisfied"]
    assert steps[2]["waited_s"] >= 2.5  # the second line, three seconds later
    assert (tmp_path / "finished").exists()  # the command ran to its end, not killed


def test_a_wait_for_the_prompt_is_not_satisfied_by_the_prompt_already_shown(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    objective = "command: sleep 3; touch finished\nwait-for: tidegate$\n"
    res = op(
        capsys, "engineer", "terminal", SP, objective, str(root), "--cwd", str(tmp_path), "--json"
    )
    assert res.code == 0, res.out
    assert res.json()["steps"][1]["waited_s"] >= 2.5  # the next prompt, when sleep ended
    assert (tmp_path / "finished").exists()


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("key: ctrl-x", "line 3: unknown key 'ctrl-x'"),
        ("timeout: \u00b2", "line 3: timeout takes whole seconds"),
        ("timeout: 601", "line 3: timeout takes whole seconds"),
        ("send: y", "line 3: expected one of"),
    ],
)
def test_an_objective_is_checked_whole_before_any_step_runs(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path, bad: str, says: str
) -> None:
    made = tmp_path / "made"
    objective = f"command: touch {made}; echo made-it\nwait-for: made-it\n{bad}\n"
    res = op(capsys, "engineer", "terminal", SP, objective, str(root), "--cwd", str(tmp_path))
    assert res.code == 2, res.out + res.err
    assert res.err.count("\n") == 1 and says in res.err, res.err
    assert not made.exists()  # nothing ran
    assert not root.exists()
    script = tmp_path / "steps.txt"
    script.write_text(objective)
    res = op(capsys, "engineer", "terminal-file", SP, str(script), str(root))
    assert res.code == 2 and res.err.count("\n") == 1 and says in res.err
    assert not made.exists() and not root.exists()
