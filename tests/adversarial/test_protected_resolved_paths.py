"""The attacker spells a protected path so that it does not look protected: through a
symlinked directory (``self -> .``, ``link -> .github``), one that exists at T0, one only
in the user's work tree (ignored, so absent from T0), or one the same proposal creates;
or through a symlink that leaves the repository without a single ``..``.

Through the real engine and through the real tool host, each must be refused and leave
the work tree and ``.git/index`` byte-identical.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor, sha
from tidegate.records.report import FlowReport
from tidegate.tools.policy import ApprovalProfile

LINK_SELF = (
    "diff --git a/self b/self\nnew file mode 120000\n--- /dev/null\n+++ b/self\n"
    "@@ -0,0 +1 @@\n+.\n\\ No newline at end of file\n"
)
WORKFLOW_THROUGH_SELF = (
    "diff --git a/self/.github/workflows/x.yml b/self/.github/workflows/x.yml\n"
    "new file mode 100644\n--- /dev/null\n+++ b/self/.github/workflows/x.yml\n"
    "@@ -0,0 +1 @@\n+on: push\n"
)


def _create(path: str) -> str:
    return f"create-file: {path}\ncontent: <<<\non: push\n>>>\n"


def _attack(repo: Repo, objective: str, *expected: str) -> FlowReport:
    before = repo.tree_state(with_mtimes=True)
    report = repo.run(objective, max_attempts=1)
    assert report.status == "failed", report.message
    assert report.failure_phase == "VALIDATE", report.message
    for text in expected:
        assert text in report.message, report.message
    assert repo.tree_state(with_mtimes=True) == before
    assert not (repo.root / ".github" / "workflows").exists()
    return report


@pytest.mark.parametrize(
    ("path", "resolved", "why"),
    [
        ("self/.github/workflows/x.yml", ".github/workflows/x.yml", "'.github/workflows/**'"),
        ("self/.tidegate/config.toml", ".tidegate/config.toml", "tidegate's own .tidegate/"),
        ("self/self/Jenkinsfile", "Jenkinsfile", "'Jenkinsfile'"),
    ],
)
def test_a_symlink_to_the_root_at_t0_does_not_hide_a_protected_path(
    committed_repo: Repo, path: str, resolved: str, why: str
) -> None:
    os.symlink(".", committed_repo.root / "self")
    committed_repo.commit_all("a link to the root")
    _attack(committed_repo, _create(path), "passes through the symlink self", resolved, why)


def test_a_link_to_github_at_t0_does_not_hide_the_workflows(committed_repo: Repo) -> None:
    committed_repo.write(".github/CODEOWNERS", "* @me\n")
    os.symlink(".github", committed_repo.root / "link")
    committed_repo.commit_all("link")
    _attack(
        committed_repo,
        _create("link/workflows/ci.yml"),
        "passes through the symlink link",
        ".github/workflows/ci.yml",
        "'.github/workflows/**'",
    )


def test_an_ignored_symlink_only_in_the_work_tree_is_seen_before_anything_runs(
    committed_repo: Repo,
) -> None:
    """Ignored entries are not in T0 (nor in the shadow): the work tree is looked at too,
    so the refusal comes in VALIDATE, before verification, not as an apply-back conflict."""
    committed_repo.write(".gitignore", ".env\nbuild/\n__pycache__/\nself\n")
    committed_repo.commit_all("ignore self")
    os.symlink(".", committed_repo.root / "self")
    _attack(
        committed_repo,
        _create("self/.github/workflows/x.yml"),
        "passes through the symlink self in your work tree",
        ".github/workflows/x.yml",
    )


def test_a_symlink_out_of_the_repository_without_dotdot_is_refused(
    committed_repo: Repo, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(str(outside), committed_repo.root / "out")
    committed_repo.commit_all("an absolute link")
    _attack(committed_repo, _create("out/payload.sh"), "out, which leads outside the repository")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("form", ["diff", "diff+edit"])
def test_a_symlink_created_and_written_through_in_one_proposal_is_refused(
    committed_repo: Repo, tmp_path: Path, form: str
) -> None:
    diff = tmp_path / "p.diff"
    if form == "diff":
        diff.write_text(LINK_SELF + WORKFLOW_THROUGH_SELF)
        objective = f"patch-file: {diff}\n"
    else:
        diff.write_text(LINK_SELF)
        objective = f"patch-file: {diff}\n" + _create("self/.github/workflows/x.yml")
    _attack(committed_repo, objective, "self: the proposal writes it and also")


@pytest.mark.parametrize(
    ("name", "target", "expected"),
    [
        ("self", ".", "a symlink to the repository root"),
        ("deep/up", "..", "a symlink to the repository root"),
        ("link", ".github", "aliases the protected '.github/workflows/**'"),
        ("cfg", ".tidegate", "aliases the protected '.tidegate'"),
        ("hooks", ".git/hooks", "aliases the protected '.git'"),
    ],
)
def test_a_proposal_may_not_plant_an_aliasing_symlink_for_the_next_run(
    committed_repo: Repo, tmp_path: Path, name: str, target: str, expected: str
) -> None:
    """Even alone, such a link is refused: a later write through it (a tool, an editor,
    the next run) would reach what its spelling hides."""
    diff = tmp_path / "link.diff"
    diff.write_text(
        f"diff --git a/{name} b/{name}\nnew file mode 120000\n--- /dev/null\n+++ b/{name}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )
    _attack(committed_repo, f"patch-file: {diff}\n", expected)


def test_an_ordinary_symlink_is_still_fine(committed_repo: Repo, tmp_path: Path) -> None:
    diff = tmp_path / "link.diff"
    diff.write_text(
        "diff --git a/latest.py b/latest.py\nnew file mode 120000\n--- /dev/null\n"
        "+++ b/latest.py\n@@ -0,0 +1 @@\n+calc.py\n\\ No newline at end of file\n"
    )
    report = committed_repo.run(f"patch-file: {diff}\n")
    assert report.status == "succeeded", report.message
    assert os.readlink(committed_repo.root / "latest.py") == "calc.py"


# -- the tool host: a model or MCP client choosing the path argument ------------------------


def _host_attack(
    repo: Repo, tool: str, status: str, expected: str, profile: ApprovalProfile, **args: str
) -> None:
    before = repo.tree_state(with_mtimes=True)
    with executor(repo.root, approval=profile) as ex:
        if tool == "workspace_edit" or args.get("expect") == "":
            args["expect"] = sha(ex, args["path"])  # the attacker read the file first
        result = ex.execute(call(tool, **args))
    assert not result.ok
    assert result.status == status, result
    assert result.error is not None and expected in result.error.message, result.error
    if status == "error":  # refused by the port at commit, on the resolved path
        assert result.error.code == "path_refused"
        assert result.error.details == {"reason": "tidegate_config"}
    assert result.effects.write == ()
    assert repo.tree_state(with_mtimes=True) == before


@pytest.mark.parametrize("profile", list(ApprovalProfile))
def test_host_write_through_self_link_to_a_workflow_needs_approval(
    committed_repo: Repo, profile: ApprovalProfile
) -> None:
    os.symlink(".", committed_repo.root / "self")
    committed_repo.commit_all("a link to the root")
    _host_attack(
        committed_repo,
        "workspace_write",
        "pending_approval",
        "self/.github/workflows/ci.yml (which resolves to .github/workflows/ci.yml) is protected",
        profile,
        path="self/.github/workflows/ci.yml",
        content="on: push\n",
        expect="must_not_exist",
    )


def test_host_write_through_a_link_to_github_needs_approval(committed_repo: Repo) -> None:
    committed_repo.write(".github/CODEOWNERS", "* @me\n")
    os.symlink(".github", committed_repo.root / "link")
    _host_attack(
        committed_repo,
        "workspace_write",
        "pending_approval",
        "resolves to .github/workflows/ci.yml) is protected",
        ApprovalProfile.TRUSTED_WORKSPACE,
        path="link/workflows/ci.yml",
        content="on: push\n",
        expect="must_not_exist",
    )


def test_host_write_through_self_link_to_the_local_config_is_denied(committed_repo: Repo) -> None:
    committed_repo.write(".tidegate/config.toml", '[validate]\nprotected = [".github/**"]\n')
    os.symlink(".", committed_repo.root / "self")
    _host_attack(
        committed_repo,
        "workspace_edit",
        "denied",
        "resolves to .tidegate/config.toml) is inside .git or .tidegate",
        ApprovalProfile.TRUSTED_WORKSPACE,
        path="self/.tidegate/config.toml",
        old='[".github/**"]',
        new="[]",
    )


def test_host_edit_of_the_policy_table_in_pyproject_is_refused(committed_repo: Repo) -> None:
    committed_repo.write(
        "pyproject.toml", '[project]\nname = "calc"\n\n[tool.tidegate.validate]\nmax_files = 5\n'
    )
    committed_repo.commit_all("policy")
    _host_attack(
        committed_repo,
        "workspace_edit",
        "error",
        "alters [tool.tidegate]",
        ApprovalProfile.TRUSTED_WORKSPACE,
        path="pyproject.toml",
        old="max_files = 5",
        new="max_files = 5000",
    )
    # The rest of the file is the user's project, and stays editable.
    with executor(committed_repo.root) as ex:
        ok = ex.execute(
            call(
                "workspace_edit",
                path="pyproject.toml",
                old='name = "calc"',
                new='name = "calc2"',
                expect=sha(ex, "pyproject.toml"),
            )
        )
    assert ok.ok, ok.error
    assert 'name = "calc2"' in committed_repo.read("pyproject.toml")


def test_host_write_to_the_file_pyproject_links_to_is_refused(committed_repo: Repo) -> None:
    committed_repo.write("cfg/pyproject.toml", "[tool.tidegate.validate]\nmax_files = 5\n")
    os.symlink("cfg/pyproject.toml", committed_repo.root / "pyproject.toml")
    committed_repo.commit_all("linked")
    _host_attack(
        committed_repo,
        "workspace_write",
        "error",
        "alters [tool.tidegate]",
        ApprovalProfile.TRUSTED_WORKSPACE,
        path="cfg/pyproject.toml",
        content="[tool.tidegate.validate]\nprotected = []\n",
        expect="",
    )


def test_host_uses_the_users_protected_list(committed_repo: Repo) -> None:
    """``tidegate tools`` / ``mcp`` sessions judge writes by the repository's configured
    list, not a built-in one, and record it with the session."""
    from tidegate.store import open_run_store
    from tidegate.tools.host import open_executor, open_tool_run

    committed_repo.write(".tidegate/config.toml", '[validate]\nprotected = ["deploy/**"]\n')
    os.symlink(".", committed_repo.root / "self")
    before = committed_repo.tree_state(with_mtimes=True)
    with open_executor(committed_repo.root, approval="trusted-workspace") as ex:
        run = open_tool_run(ex, "tools", None, {})
        result = ex.execute(
            call(
                "workspace_write", path="self/deploy/run.sh", content="x\n", expect="must_not_exist"
            )
        )
        run.finish()
    assert result.status == "pending_approval", result
    assert result.error is not None and "(deploy/**)" in result.error.message
    assert committed_repo.tree_state(with_mtimes=True) == before
    recorded = open_run_store(committed_repo.root, None).request(run.run_id)
    assert recorded is not None and recorded["protected"] == ["deploy/**"]


def test_the_port_itself_refuses_the_config_whatever_approved_the_call(
    committed_repo: Repo,
) -> None:
    """The commit-time check on the resolved path: it holds for any caller of the port
    (and for a symlink swapped in after an approval was decided on the old spelling)."""
    from tidegate.workspace.confine.refusal import PathRefused
    from tidegate.workspace.port import WorkspacePort

    committed_repo.write(".tidegate/config.toml", "[validate]\n")
    os.symlink(".", committed_repo.root / "self")
    before = committed_repo.tree_state(with_mtimes=True)
    with WorkspacePort(committed_repo.root) as port:
        digest = port.read(".tidegate/config.toml").sha256
        attempts = [
            lambda: port.write("self/.tidegate/config.toml", "", expect=digest),
            lambda: port.edit("self/.tidegate/config.toml", old="[", new="#[", expect=digest),
            lambda: port.delete("self/.tidegate/config.toml", expect=digest),
            lambda: port.write("self/.tidegate/new.toml", "x", expect="must_not_exist"),
        ]
        for attempt in attempts:
            with pytest.raises(PathRefused) as refused:
                attempt()
            assert refused.value.reason == "tidegate_config"
    assert committed_repo.tree_state(with_mtimes=True) == before


def test_host_write_through_a_link_out_of_the_workspace_is_refused(
    committed_repo: Repo, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(str(outside), committed_repo.root / "out")
    before = committed_repo.tree_state(with_mtimes=True)
    with executor(committed_repo.root, approval=ApprovalProfile.TRUSTED_WORKSPACE) as ex:
        result = ex.execute(
            call("workspace_write", path="out/ci.yml", content="x\n", expect="must_not_exist")
        )
    assert result.error is not None and result.error.code == "path_refused", result
    assert result.effects.write == ()
    assert committed_repo.tree_state(with_mtimes=True) == before
    assert list(outside.iterdir()) == []


def test_a_file_replaced_by_a_directory_is_judged_without_tripping(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """``a`` is a file at T0 and the change makes it a directory: walking ``a/b/c.txt`` on
    disk meets a file where a directory is spelled; that is no symlink, and no crash: the
    swap is refused by name (validate/shapes), as a classified VALIDATE failure."""
    committed_repo.write("notes", "a file\n")
    committed_repo.commit_all("a file")
    before = committed_repo.tree_state(with_mtimes=True)
    report = committed_repo.run("delete-file: notes\n" + _create("notes/b/c.txt"), max_attempts=1)
    validate = [e for e in report.phases if e.phase == "VALIDATE"]
    assert [e.status for e in validate] == ["failed"], report.message
    assert report.error_class == "AST_VALIDATION_ERROR", report.message
    assert "replaces this file with a directory" in report.message
    assert committed_repo.tree_state(with_mtimes=True) == before


@pytest.mark.parametrize("spelling", [".TIDEGATE/config.toml", ".TideGate/config.toml"])
def test_another_case_of_the_config_dir_is_refused(committed_repo: Repo, spelling: str) -> None:
    """On a case-insensitive file system these are ``.tidegate/config.toml``."""
    _attack(committed_repo, _create(spelling), "inside tidegate's own .tidegate/ directory")
    before = committed_repo.tree_state(with_mtimes=True)
    with executor(committed_repo.root, approval=ApprovalProfile.TRUSTED_WORKSPACE) as ex:
        denied = ex.execute(
            call("workspace_write", path=spelling, content="x\n", expect="must_not_exist")
        )
    assert denied.status == "denied", denied
    assert committed_repo.tree_state(with_mtimes=True) == before
