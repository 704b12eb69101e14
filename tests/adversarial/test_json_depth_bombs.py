"""JSON nested 100,000 deep (``[[[[...]]]]``) wherever tidegate parses JSON that a file,
a client or a model wrote: a scripted planner, a SWE-bench instance file, a tool call's
arguments from a model, a JSON or TOML file a proposal writes, a run store row. Python's
``json`` (and ``tomllib``) recurse once per level, so each of these raised
``RecursionError``. Now each parse goes through ``tidegate.text.jsonparse.parse_json``, which
refuses nesting past 200 levels as malformed JSON: one line, or the structured result the
parse already had for malformed input, and nothing lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adversarial.test_corrupt_store import _edit, _one_line, runs
from tests.conftest import Repo, containment_verified, tidegate_cli
from tests.e2e._operator import op
from tests.integration.models.servers import LoopbackServer, Reply, oa_completion

DEPTH = 100_000
BOMB = "[" * DEPTH + "]" * DEPTH

__all__ = ["runs"]  # the fixture, shared with test_corrupt_store


def _refused(res_code: int, err: str, *words: str) -> None:
    assert res_code == 2, err
    assert err.count("\n") == 1 and err.startswith("tidegate: error: "), err
    assert "Traceback" not in err and "RecursionError" not in err
    for word in words:
        assert word in err, (word, err)


def test_a_scripted_planner_file(committed_repo: Repo, tmp_path: Path) -> None:
    script = tmp_path / "deep.json"
    script.write_text('{"planner": "scripted", "attempts": ' + BOMB + "}")
    before = committed_repo.tree_state()
    res = tidegate_cli(
        "run",
        "--planner",
        f"scripted:{script}",
        "--objective",
        "x",
        "--verify",
        "true",
        cwd=committed_repo.root,
    )
    _refused(res.returncode, res.stderr, "invalid JSON", "nested deeper than 200 levels")
    assert committed_repo.tree_state() == before


@pytest.mark.parametrize("where", ["line", "FAIL_TO_PASS string"])
def test_a_swe_instance_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    instance = {
        "instance_id": "x", "repo": "a/b", "base_commit": "0123abc", "patch": "",
        "test_patch": "", "FAIL_TO_PASS": BOMB, "PASS_TO_PASS": [],
    }  # fmt: skip
    line = '{"instance_id": ' + BOMB + "}" if where == "line" else json.dumps(instance)
    path = tmp_path / "deep.jsonl"
    path.write_text(line + "\n")
    res = op(capsys, "gym", "swe", str(path), "--oracle", "--state-root", str(tmp_path / "s"))
    _refused(res.code, res.err, "deep.jsonl:1")


def test_a_models_tool_call_arguments(committed_repo: Repo, tmp_path: Path) -> None:
    """An OpenAI-compatible server (on loopback) answers with a tool call whose arguments
    are a depth bomb: malformed model output, which the run ends on in its report."""
    bomb = Reply(body=oa_completion(tool_calls=[("c1", "workspace_read", BOMB)]))
    with LoopbackServer([bomb] * 4, key="sk-local-123", key_header="authorization") as server:
        config = committed_repo.root / ".tidegate" / "config.toml"
        config.parent.mkdir()
        config.write_text(f'[model]\nbase_url = "{server.url}/v1"\nstreaming = false\n')
        before = committed_repo.read("calc.py")
        res = tidegate_cli(
            "run", "--model", "openai:local-model", "--objective", "Make add() add.",
            "--verify", "true", "--json", "--state-root", str(tmp_path / "state"),
            *([] if containment_verified() else ["--containment", "none"]),  # approval
            cwd=committed_repo.root, env={"OPENAI_API_KEY": "sk-local-123"},
        )  # fmt: skip
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr, res.stderr
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "failed"
    assert "not valid JSON" in report["message"] and "nested deeper than 200" in report["message"]
    assert committed_repo.read("calc.py") == before


@pytest.mark.parametrize(
    ("name", "content"),
    [("deep.json", BOMB), ("deep.toml", "a = " + BOMB)],
)
def test_a_proposed_file_too_deep_for_pythons_parser(
    committed_repo: Repo, tmp_path: Path, name: str, content: str
) -> None:
    """Validation leaves such a file to tree-sitter, which has no such limit: valid, it is
    applied; the run never dies in AST_VALIDATE."""
    objective = tmp_path / "objective.txt"
    objective.write_text(f"create-file: {name}\ncontent: <<<\n{content}\n>>>\n")
    res = tidegate_cli(
        "run", "--objective-file", str(objective), "--verify", "true", "--json",
        cwd=committed_repo.root,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["status"] == "succeeded"
    assert committed_repo.read(name) == content + "\n"


def test_a_run_store_row(runs: tuple[Repo, str, str]) -> None:
    repo, done, _ = runs
    _edit("UPDATE attempts SET event_json = ? WHERE run_id = ?", BOMB, done)
    proc = tidegate_cli("read", done, "--json", "--detail", cwd=repo.root)
    assert proc.returncode == 1 and proc.stdout == ""
    _one_line(proc.stderr, done, "attempt 1", "nested deeper than 200 levels")


def test_a_search_cursor_that_is_a_depth_bomb_is_a_bad_query(tmp_path: Path) -> None:
    import base64

    from tidegate.workspace.port.cursor import decode_cursor

    bomb = base64.urlsafe_b64encode(b"[" * 100_000 + b"]" * 100_000).decode()
    with pytest.raises(Exception) as caught:
        decode_cursor(bomb, ("q",))
    assert not isinstance(caught.value, RecursionError)


def test_a_configuration_nested_too_deeply_is_one_clear_error(tmp_path: Path) -> None:
    from tidegate.config import load_policy
    from tidegate.errors import UsageError

    (tmp_path / "pyproject.toml").write_text(
        "[tool.tidegate]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    with pytest.raises(UsageError, match="nested too deeply"):
        load_policy(tmp_path)
