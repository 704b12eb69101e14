"""``tidegate tools`` as an operator runs it: list, call, approvals, usage errors."""

from __future__ import annotations

import json

from tests.conftest import Repo, tidegate_cli


def test_list_shows_all_21_with_states_and_labels(committed_repo: Repo) -> None:
    plain = tidegate_cli("tools", "list", "--json", "--workspace", str(committed_repo.root))
    assert plain.returncode == 0, plain.stderr
    data = json.loads(plain.stdout)
    assert len(data["tools"]) == 21
    states = {t["canonical_id"]: t["state"] for t in data["tools"]}
    assert states["workspace.read"] == "active"
    assert states["research.search"] == "absent (no adapter)"
    assert data["effect_profile_version"] == "1.1.0"

    doubled = tidegate_cli(
        "tools", "list", "--with-doubles", "--workspace", str(committed_repo.root)
    )
    assert doubled.returncode == 0
    line = next(x for x in doubled.stdout.splitlines() if x.startswith("research.search"))
    assert "double:" in line and "active" in line

    review = tidegate_cli(
        "tools", "list", "--json", "--mode", "review", "--workspace", str(committed_repo.root)
    )
    rows = {t["canonical_id"]: t["state"] for t in json.loads(review.stdout)["tools"]}
    assert rows["workspace.write"].startswith("excluded")


def test_call_read_then_write_with_precondition(committed_repo: Repo) -> None:
    ws = str(committed_repo.root)
    read = tidegate_cli(
        "tools", "call", "workspace_read", "--args", '{"path": "calc.py"}', "--workspace", ws
    )
    assert read.returncode == 0, read.stderr
    result = json.loads(read.stdout)
    assert result["effects_authority"] == "host"
    digest = result["output"]["sha256"]
    args = json.dumps({"path": "calc.py", "old": "a - b", "new": "a + b", "expect": digest})
    edit = tidegate_cli("tools", "call", "workspace.edit", "--args", args, "--workspace", ws)
    assert edit.returncode == 0, edit.stdout
    write = json.loads(edit.stdout)["effects"]["write"][0]
    assert write["path"] == "calc.py" and write["before"]["sha256"] == digest
    again = tidegate_cli("tools", "call", "workspace.edit", "--args", args, "--workspace", ws)
    assert again.returncode == 1
    assert json.loads(again.stdout)["error"]["code"] == "stale_precondition"


def test_pending_approval_then_grant(committed_repo: Repo) -> None:
    ws = str(committed_repo.root)
    args = '{"path": "new.txt", "content": "hi\\n", "expect": "must_not_exist"}'
    pending = tidegate_cli(
        "tools",
        "call",
        "workspace_write",
        "--args",
        args,
        "--workspace",
        ws,
        "--approval",
        "strict",
    )
    assert pending.returncode == 3
    request = json.loads(pending.stdout)["approval_request"]["request_id"]
    assert f"--grant {request}" in pending.stderr
    assert not (committed_repo.root / "new.txt").exists()
    granted = tidegate_cli(
        "tools",
        "call",
        "workspace_write",
        "--args",
        args,
        "--workspace",
        ws,
        "--approval",
        "strict",
        "--grant",
        request,
    )
    assert granted.returncode == 0, granted.stdout
    assert (committed_repo.root / "new.txt").read_text() == "hi\n"


def test_usage_errors_are_one_line(committed_repo: Repo) -> None:
    ws = str(committed_repo.root)
    for args in (
        ("tools", "call", "no_such_tool", "--workspace", ws),
        ("tools", "call", "workspace_read", "--args", "{nope", "--workspace", ws),
        ("tools", "call", "workspace_read", "--args", "[]", "--workspace", ws),
        ("tools", "call", "workspace_read", "--approval", "lax", "--workspace", ws),
        ("tools", "list", "--workspace", str(committed_repo.root / "missing")),
    ):
        proc = tidegate_cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1
        assert proc.stderr.startswith("tidegate: error:")


def test_schema_invalid_and_read_only_mode_are_failed_calls(committed_repo: Repo) -> None:
    ws = str(committed_repo.root)
    bad = tidegate_cli(
        "tools", "call", "workspace_read", "--args", '{"file": "x"}', "--workspace", ws
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_arguments"
    args = '{"path": "x", "content": "", "expect": "must_not_exist"}'
    review = tidegate_cli(
        "tools", "call", "workspace_write", "--args", args, "--workspace", ws, "--mode", "review"
    )
    assert review.returncode == 1
    assert json.loads(review.stdout)["error"]["code"] == "inactive_tool"
    assert not (committed_repo.root / "x").exists()
