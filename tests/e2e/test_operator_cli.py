"""Every operator command's happy path through the CLI, and the carry-over between them:
meeting -> goals -> engineer run shows them -> review -> improvement curation -> goals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, containment_verified, tidegate_cli
from tests.e2e._operator import EDIT, op

SP = "single-process"
LH = "local-harness"
FAILING_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "operator-state"


@pytest.fixture
def dirty(committed_repo: Repo) -> Repo:
    """Staged, unstaged and untracked work that every command must leave alone."""
    committed_repo.write("README.md", "# calc\nstaged line\n")
    committed_repo.git("add", "README.md")
    committed_repo.write("README.md", "# calc\nstaged line\nunstaged line\n")
    committed_repo.write("notes.txt", "untracked\n")
    return committed_repo


def test_engineer_structured_edit_on_a_dirty_tree(
    capsys: pytest.CaptureFixture[str], dirty: Repo, root: Path
) -> None:
    index = dirty.index_bytes()
    staged = dirty.git("diff", "--cached")
    res = op(capsys, "engineer", "run", SP, str(dirty.root), EDIT, str(root), "--json")
    assert res.code == 0, res.err
    view = res.json()
    assert view["action"]["name"] == "structured-text-replacement"
    assert view["selection"]["implementation"] == "local-harness::structured-planner"
    assert view["verification"]["passed"] is True
    assert "return a + b" in dirty.read("calc.py")
    assert dirty.index_bytes() == index  # staged work exactly as it was
    assert dirty.git("diff", "--cached") == staged
    assert dirty.read("README.md").endswith("unstaged line\n")
    assert dirty.read("notes.txt") == "untracked\n"
    assert " M calc.py" in dirty.status()
    for name in ("latest_engineer_handoff.json", "latest_handoff.json"):
        assert (root / name).is_file()
    assert "return a - b" not in (root / "latest_engineer_handoff.json").read_text()


@pytest.mark.parametrize("shape", [" M", "MM"])
def test_engineer_edit_of_a_file_the_user_already_edited(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, root: Path, shape: str
) -> None:
    """The commonest dirty tree: the target itself holds your unstaged edit (`` M``), or a
    staged and an unstaged one (``MM``). Its status code is the same after the merge, so
    verification must look at what the run wrote, not at the status code alone."""
    repo = committed_repo
    original = repo.read("calc.py")
    if shape == "MM":
        repo.write("calc.py", original + "# staged\n")
        repo.git("add", "calc.py")
    mine = repo.read("calc.py") + "# mine, unstaged\n"
    repo.write("calc.py", mine)
    assert repo.status() == f"{shape} calc.py\n"
    index = repo.index_bytes()

    res = op(capsys, "engineer", "run", SP, str(repo.root), EDIT, str(root), "--json")

    view = res.json()
    assert res.code == 0, view["verification"]
    assert view["verification"]["passed"] is True
    assert repo.read("calc.py") == mine.replace("return a - b", "return a + b")
    assert repo.status() == f"{shape} calc.py\n"
    assert repo.index_bytes() == index


def test_engineer_verification_still_sees_another_dirty_file_change(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, root: Path, tmp_path: Path
) -> None:
    """The other side of comparing content: a path that was already dirty and whose bytes
    the verify command changed (uncontained) fails "no other path changed", though its
    status code is the same."""
    repo = committed_repo
    repo.write(".tidegate/config.toml", '[containment]\nmode = "none"\n')  # VERIFY may write
    repo.write("README.md", "# calc\nmine\n")
    script = tmp_path / "touch.py"
    script.write_text(f"open({str(repo.root / 'README.md')!r}, 'a').write('by verify\\n')\n")
    verify = f"{sys.executable} {script}"

    res = op(
        capsys, "engineer", "run", SP, str(repo.root), EDIT, str(root), "--json", "--verify", verify
    )

    view = res.json()
    assert res.code == 1
    failed = {c["check"]: c for c in view["verification"]["checks"] if not c["passed"]}
    assert failed["no other path changed"]["detail"] == ["README.md"]


def test_engineer_scan_changes_nothing(
    capsys: pytest.CaptureFixture[str], dirty: Repo, root: Path
) -> None:
    before = dirty.tree_state(with_mtimes=True)
    res = op(capsys, "engineer", "run", SP, str(dirty.root), "look around", str(root))
    assert res.code == 0, res.err
    assert "git-tracked-file-scan" in res.out
    assert "objective-metadata(chars=11, words=2, lines=1)" in res.out
    assert dirty.tree_state(with_mtimes=True) == before
    dirty.write("pyproject.toml", "[project]\nname = 'calc'\n")
    res = op(capsys, "engineer", "run", SP, str(dirty.root), "look again", str(root), "--json")
    assert res.json()["action"]["name"] == "project-manifest-scan"


def test_engineer_read_renders_the_fixed_order_without_the_objective(
    capsys: pytest.CaptureFixture[str], dirty: Repo, root: Path
) -> None:
    secret_words = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    assert op(capsys, "engineer", "run", SP, str(dirty.root), EDIT, str(root)).code == 0
    before = dirty.tree_state(with_mtimes=True)
    state = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    res = op(capsys, "engineer", "read", SP, str(root))
    assert res.code == 0, res.err
    headers = [
        "selection:",
        "handoff:",
        "repo grounding:",
        "carried context:",
        "terminal continuity:",
        "action:",
        "verification:",
        "records:",
    ]
    positions = [res.out.index(h) for h in headers]
    assert positions == sorted(positions)
    assert "file: latest_engineer_handoff.json" in res.out
    for line in secret_words.splitlines():
        assert line not in res.out
    assert dirty.tree_state(with_mtimes=True) == before
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == state
    text_view = res.out
    as_json = op(capsys, "engineer", "read", SP, str(root), "--json").json()
    assert as_json["handoff"]["objective"] in text_view
    assert list(as_json)[1:] == [
        "selection",
        "handoff",
        "repo_grounding",
        "carried_context",
        "terminal_continuity",
        "action",
        "verification",
        "records",
    ]


def test_carry_over_across_modes(
    capsys: pytest.CaptureFixture[str], dirty: Repo, root: Path
) -> None:
    dirty.write("test_calc.py", FAILING_TEST)
    dirty.git("add", "test_calc.py")
    dirty.git("commit", "-q", "-m", "tests")
    meeting = (
        "agenda: calc\ndecision: fix add first\nnext-step: run the tests\n"
        "goal: Fix add | priority=2 | status=active | rationale=users hit it\n"
        "goal: Write docs | priority=5 | status=proposed\n"
    )
    assert op(capsys, "meeting", "run", LH, SP, meeting, str(root)).code == 0
    res = op(
        capsys,
        "goal-curation",
        "run",
        LH,
        SP,
        "goal: Speed | priority=1 | status=active",
        str(root),
    )
    assert res.code == 0, res.err
    goals = op(capsys, "goal-curation", "read", LH, SP, str(root), "--json").json()
    assert [g["title"] for g in goals["active_top"]] == ["Speed", "Fix add"]
    by_id = {g["id"]: g["title"] for s in goals["backlog"].values() for g in s}
    history = [(by_id[c["goal_id"]], c["source"].split("::")[0]) for c in goals["changes"]]
    assert history == [
        ("Fix add", "meeting"),
        ("Write docs", "meeting"),
        ("Speed", "goal-curation"),
    ]
    eng = op(capsys, "engineer", "run", SP, str(dirty.root), "survey", str(root), "--json").json()
    assert eng["carried_context"]["active_goals"] == ["p1 Speed", "p2 Fix add"]
    assert eng["carried_context"]["meetings"][0]["decisions"] == ["fix add first"]
    verify = f"{sys.executable} -B -m pytest -q -p no:cacheprovider"
    review = op(
        capsys,
        "review",
        "run",
        LH,
        SP,
        "review calc",
        str(root),
        "--repo",
        str(dirty.root),
        "--verify",
        verify,
        "--json",
    )
    assert review.code == 0, review.err
    rv = review.json()
    assert rv["run"]["fs_mode"] == "read-only"
    located = [p for p in rv["proposals"] if p["path"] == "test_calc.py"]
    assert located, rv["proposals"]
    others = [p for p in rv["proposals"] if p["id"] != located[0]["id"]]
    decisions = f"approve: {located[0]['id']} | priority=3\ndefer: {others[0]['id']} | reason=dup\n"
    res = op(capsys, "improvement-curation", "run", LH, SP, decisions, str(root))
    assert res.code == 0, res.err
    curated = op(capsys, "improvement-curation", "read", LH, SP, str(root), "--json").json()
    assert [a["id"] for a in curated["approved"]] == [located[0]["id"]]
    assert [d["id"] for d in curated["deferred"]] == [others[0]["id"]]
    titles = [g["title"] for g in curated["active_goals"]]
    assert titles[:2] == ["Speed", "Fix add"] and located[0]["title"] in titles
    assert [g["title"] for g in curated["proposed_goals"]] == ["Write docs"]
    read = op(capsys, "review", "read", LH, SP, str(root), "--json").json()
    assert read["run_id"] == rv["run"]["run_id"]
    meeting_view = op(capsys, "meeting", "read", LH, SP, str(root), "--json").json()
    assert meeting_view["decisions"] == ["fix add first"]
    # Every read leaves the workspace, its index and the state root byte-identical.
    before = dirty.tree_state(with_mtimes=True)
    stored = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    for read_args in (
        ("meeting", "read", LH, SP, str(root)),
        ("goal-curation", "read", LH, SP, str(root)),
        ("improvement-curation", "read", LH, SP, str(root)),
        ("review", "read", LH, SP, str(root)),
        ("engineer", "read", SP, str(root)),
    ):
        for flag in ((), ("--json",)):
            assert op(capsys, *read_args, *flag).code == 0, read_args
    assert dirty.tree_state(with_mtimes=True) == before
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == stored
    # The next engineer run sees the approved proposal as a goal.
    eng = op(capsys, "engineer", "run", SP, str(dirty.root), "survey", str(root), "--json").json()
    assert f"p3 {located[0]['title']}" in eng["carried_context"]["active_goals"]


def test_bootstrap_runs_the_identity_primary_mode(
    capsys: pytest.CaptureFixture[str], dirty: Repo, root: Path
) -> None:
    res = op(capsys, "bootstrap", "run", "meeting", LH, SP, "decision: go", str(root), "--json")
    assert res.code == 0, res.err
    assert res.json()["mode"] == "meeting"
    res = op(
        capsys,
        "bootstrap",
        "run",
        "engineer",
        LH,
        SP,
        EDIT,
        str(root),
        "--repo",
        str(dirty.root),
        "--json",
    )
    assert res.code == 0, res.err
    assert res.json()["verification"]["passed"] is True
    res = op(
        capsys,
        "bootstrap",
        "run",
        "composite-engineer",
        LH,
        SP,
        "look",
        str(root),
        "--repo",
        str(dirty.root),
        "--json",
    )
    assert res.code == 0, res.err
    view = res.json()
    assert view["review"]["run"]["fs_mode"] == "read-only"
    assert view["engineer"]["action"]["name"] == "git-tracked-file-scan"


def test_text_and_json_views_carry_the_same_content(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    op(capsys, "meeting", "run", LH, SP, "risk: flaky CI\nopen-question: which runner?", str(root))
    text = op(capsys, "meeting", "read", LH, SP, str(root)).out
    view = op(capsys, "meeting", "read", LH, SP, str(root), "--json").json()
    for value in (
        *view["risks"],
        *view["open_questions"],
        str(view["record"]["meetings_recorded"]),
    ):
        assert value in text


def test_legacy_names_map_to_the_canonical_commands(dirty: Repo, root: Path) -> None:
    res = tidegate_cli("engineer", "run", SP, str(dirty.root), "survey", str(root))
    assert res.returncode == 0, res.stderr
    legacy = subprocess_probe("engineer-read", SP, str(root), "--json")
    canonical = tidegate_cli("engineer", "read", SP, str(root), "--json")
    assert legacy.returncode == canonical.returncode == 0
    assert json.loads(legacy.stdout) == json.loads(canonical.stdout)
    unknown = subprocess_probe("terminal-dance")
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "engineer-loop-run" in unknown.stderr


def subprocess_probe(*args: str):  # type: ignore[no-untyped-def]
    import subprocess

    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tidegate.cli.compat import main; sys.exit(main())",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def test_engineer_with_a_model_base_type_is_one_guarded_model_run(
    capsys: pytest.CaptureFixture[str],
    dirty: Repo,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reflection names the endpoint that actually answered (a loopback OpenAI server)."""
    from tests.integration.models.servers import LoopbackServer, Reply, oa_completion

    fix = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    check = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
    replies = [Reply(body=oa_completion("Plan: add must add.")), Reply(body=oa_completion(fix))]
    index = dirty.index_bytes()
    with LoopbackServer(replies, key="sk-local-123", key_header="authorization") as server:
        (dirty.root / ".tidegate").mkdir()
        # without bubblewrap, the user's own configuration approves running the model's
        # change uncontained (tidegate.exec.guard)
        approve = "" if containment_verified() else '[containment]\nmode = "none"\n'
        (dirty.root / ".tidegate" / "config.toml").write_text(
            f'[model]\nbase_url = "{server.url}/v1"\nstreaming = false\n' + approve
        )
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-123")
        res = op(
            capsys,
            "engineer", "run", SP, str(dirty.root), "Make add() add.", str(root),
            "--base-type", "openai", "--model", "local-model", "--verify", check, "--json",
        )  # fmt: skip
        assert len(server.received) == 2
    assert res.code == 0, res.err + res.out
    view = res.json()
    assert view["action"]["name"] == "guarded-model-run"
    assert view["selection"]["base_type"] == "openai"
    assert view["selection"]["implementation"].startswith("openai::openai-sdk 127.0.0.1:")
    assert view["selection"]["implementation"].endswith("model=local-model")
    assert view["verification"]["passed"] is True
    assert "a + b" in dirty.read("calc.py") and dirty.index_bytes() == index
    assert "sk-local-123" not in res.out
