"""A command plants git configuration, hooks and attributes for tidegate's own git to run.

Every program named below creates its own marker file outside the workspace, so a marker
that appears names what ran. The plants come from a real contained ``command.run`` where
that is the attacker's route (a workspace without its own ``.git``, a nested repository),
and from the user's repository itself for tidegate's run machinery (T0 snapshot, shadow,
fingerprint), whose hooks, fsmonitor and pager must stay off even though the user's
configuration is otherwise trusted there.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.workspace.fingerprint import fingerprint_details
from tidegate.workspace.repo import discover
from tidegate.workspace.shadow import ShadowWorktree
from tidegate.workspace.snapshot import take_snapshot

HOOKS = ("post-checkout", "pre-commit", "post-commit", "reference-transaction",
         "post-index-change", "pre-auto-gc", "fsmonitor-watchman")  # fmt: skip


def _touch(marks: Path, name: str) -> str:
    return f"sh -c 'touch {marks}/{name}; cat'"


def plant_script(marks: Path, where: str = ".", *, commit: bool = False) -> str:
    """Shell that makes ``where`` a repository whose config, hooks and attributes name
    programs, each leaving a marker in ``marks`` (``commit``: with a first commit, made
    before anything is planted)."""
    config = {
        "core.fsmonitor": _touch(marks, "fsmonitor"),
        "core.pager": _touch(marks, "pager"),
        "core.sshCommand": _touch(marks, "ssh"),
        "core.askPass": _touch(marks, "askpass"),
        "diff.external": _touch(marks, "external-diff"),
        "diff.x.textconv": _touch(marks, "textconv"),
        "filter.x.clean": _touch(marks, "clean"),
        "filter.x.smudge": _touch(marks, "smudge"),
        "filter.x.process": _touch(marks, "process"),
        "filter.x.required": "true",
        "credential.helper": f"!touch {marks}/credential",
    }
    lines = [f"mkdir -p {where}", f"cd {where}", "git init -q"]
    if commit:
        lines += ["echo base > base.txt", "git add base.txt",
                  "git -c user.name=x -c user.email=x@y commit -qm base"]  # fmt: skip
    lines += [f"git config {k} {shlex.quote(v)}" for k, v in config.items()]
    for hook in HOOKS:
        lines.append(f"printf '#!/bin/sh\\ntouch {marks}/hook-{hook}\\n' > .git/hooks/{hook}")
        lines.append(f"chmod +x .git/hooks/{hook}")
    lines.append("printf '* filter=x diff=x\\n' > .gitattributes")
    lines.append("echo planted > planted.txt")
    return "\n".join(lines) + "\n"


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


def _live(marks: Path, root: Path) -> None:
    """The plant is live for plain git: its clean filter and fsmonitor run."""
    subprocess.run(["git", "add", "-A"], cwd=root, capture_output=True, check=False)
    names = {p.name for p in marks.iterdir()}
    assert "fsmonitor" in names and names & {"clean", "process"}, f"plant not live: {names}"
    for p in marks.iterdir():
        p.unlink()


def _run_planter(ex: object, script: Path) -> None:
    # The script's text is the command: a contained command sees nothing of /tmp outside
    # its workspace, so it cannot run a file from there.
    result = ex.execute(call("command_run", command=script.read_text()))  # type: ignore[attr-defined]
    assert result.ok and result.output is not None, result
    assert result.output["exit_code"] == 0, result.output
    assert result.output["containment"]["backend"] == "bubblewrap"


@requires_containment
def test_a_git_dir_planted_in_a_plain_workspace_is_never_used(tmp_path: Path, marks: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("not a repository\n")
    script = tmp_path / "plant.sh"
    script.write_text(plant_script(marks))
    with executor(work, validation_command="true") as ex:
        _run_planter(ex, script)
        assert (work / ".git" / "config").exists() and not any(marks.iterdir())
        validated = ex.execute(call("project_validate"))
        status = ex.execute(call("git_exec", args=["status", "--porcelain"]))
        listed = ex.execute(call("workspace_list", path="."))
        again = ex.execute(call("command_run", command="echo more >> notes.txt"))
    assert validated.ok, validated
    assert status.status == "error" and status.error is not None
    assert status.error.code == "not_a_repository"
    assert listed.ok and again.ok
    assert [w.path for w in again.effects.write] == ["notes.txt"]
    assert sorted(p.name for p in marks.iterdir()) == []
    _live(marks, work)


@requires_containment
def test_a_git_dir_planted_before_the_session_runs_no_program(tmp_path: Path, marks: Path) -> None:
    """``tidegate tools call`` is one process per call: the next call first sees the
    ``.git`` an earlier call's command planted and pins it. Its inventories, fingerprints
    and git.exec still run none of its programs."""
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "plant.sh"
    script.write_text(plant_script(marks))
    subprocess.run(["sh", str(script)], cwd=work, check=True)  # the earlier call's command
    assert not any(marks.iterdir())
    with executor(work, validation_command="true") as ex:
        outcomes = [
            ex.execute(call("project_validate")),
            ex.execute(call("command_run", command="echo more >> planted.txt")),
            ex.execute(call("git_exec", args=["status", "--porcelain"])),
            ex.execute(call("git_exec", args=["diff"])),
            ex.execute(call("workspace_list", path=".")),
        ]
    assert all(o.ok for o in outcomes), outcomes
    assert sorted(p.name for p in marks.iterdir()) == []
    _live(marks, work)


@requires_containment
def test_a_nested_planted_repository_runs_nothing(committed_repo: Repo, marks: Path) -> None:
    root = committed_repo.root
    script = root.parent / "plant.sh"
    script.write_text(plant_script(marks, "sub", commit=True))
    index = committed_repo.index_bytes()
    with executor(root, validation_command="true") as ex:
        _run_planter(ex, script)
        assert not any(marks.iterdir())
        outcomes = [
            ex.execute(call("project_validate")),
            ex.execute(call("command_run", command="echo x >> sub/planted.txt")),
            *(
                ex.execute(call("git_exec", args=argv))
                for argv in (["status"], ["diff"], ["log", "-p", "-1"], ["ls-files", "-o"])
            ),
            ex.execute(call("workspace_grep", pattern="planted")),
        ]
    assert all(o.ok for o in outcomes), outcomes
    assert sorted(p.name for p in marks.iterdir()) == []
    assert committed_repo.index_bytes() == index
    _live(marks, root / "sub")


@requires_containment
def test_a_tracked_submodule_relinked_by_a_command_runs_nothing(
    committed_repo: Repo, marks: Path, tmp_path: Path
) -> None:
    """The user's submodule: a command rewrites its ``.git`` link to a git dir it planted
    in the work tree; git.exec's status and diff must not go inside the submodule."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=upstream, check=True)
    (upstream / "f.txt").write_text("f\n")
    subprocess.run(["git", "add", "."], cwd=upstream, check=True)
    subprocess.run(["git", "commit", "-qm", "f"], cwd=upstream, check=True)
    committed_repo.git("-c", "protocol.file.allow=always", "submodule", "add", str(upstream), "mod")
    committed_repo.commit_all("submodule")
    root = committed_repo.root
    script = tmp_path / "plant.sh"
    evil = root / "evilgit"
    plant = {
        "core.worktree": str(root / "mod"),
        "core.fsmonitor": _touch(marks, "fsmonitor"),
        "filter.x.clean": _touch(marks, "clean"),
    }
    script.write_text(
        f"cp -r {root}/.git/modules/mod {evil}\n"
        + "".join(f"git config -f {evil}/config {k} {shlex.quote(v)}\n" for k, v in plant.items())
        + f"printf 'gitdir: {evil}\\n' > {root}/mod/.git\n"
        f"printf '* filter=x\\n' > {root}/mod/.gitattributes\n"
        # same size, older mtime: git must run the clean filter to compare the content
        f"touch -m -d @946684800 {root}/mod/f.txt\n"
    )
    with executor(root) as ex:
        _run_planter(ex, script)
    assert not any(marks.iterdir())
    for containment in ("none", "auto"):  # uncontained first: git's own flags must hold
        with executor(root, containment=containment) as ex:
            results = [
                ex.execute(call("git_exec", args=argv))
                for argv in (["status", "--porcelain"], ["diff"], ["diff", "--stat"])
            ]
        assert all(r.ok for r in results), results
    assert sorted(p.name for p in marks.iterdir()) == []
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=False)
    assert "clean" in {p.name for p in marks.iterdir()}, "plain git status goes inside"


def test_the_users_hooks_fsmonitor_and_pager_stay_off_in_a_run(
    committed_repo: Repo, marks: Path, tmp_path: Path
) -> None:
    """T0 snapshot, shadow creation and fingerprint on a repository with every hook and
    a fsmonitor, pager, askpass and ssh command configured: none of them runs."""
    root = committed_repo.root
    for hook in HOOKS:
        path = root / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {marks}/hook-{hook}\n")
        path.chmod(0o755)
    for key, name in (("core.fsmonitor", "fsmonitor"), ("core.pager", "pager"),
                      ("core.sshCommand", "ssh"), ("core.askPass", "askpass")):  # fmt: skip
        committed_repo.git("config", key, _touch(marks, name))
    committed_repo.write("calc.py", "changed\n")
    index = committed_repo.index_bytes()
    repo = discover(root)
    (tmp_path / "scratch").mkdir()
    snap = take_snapshot(repo, "run-hooks", tmp_path / "scratch")
    shadow = ShadowWorktree.create(repo, snap.commit, "run-hooks")
    try:
        (shadow.path / "new.txt").write_text("x\n")
        shadow.reset()
        fingerprint_details(root)
    finally:
        shadow.remove()
    assert sorted(p.name for p in marks.iterdir()) == []
    assert committed_repo.index_bytes() == index
    subprocess.run(["git", "commit", "-qam", "x"], cwd=root, capture_output=True, check=False)
    assert any(marks.iterdir()), "the hooks are live for plain git"


def test_a_shadow_whose_git_link_was_rewritten_is_refused(committed_repo: Repo) -> None:
    repo = discover(committed_repo.root)
    shadow = ShadowWorktree.create(repo, repo.head, "relinked")
    try:
        planted = shadow.path / "evil"
        subprocess.run(["git", "init", "-q", str(planted)], check=True)
        (shadow.path / ".git").write_text(f"gitdir: {planted}/.git\n")
        with pytest.raises(Exception, match="points outside"):
            ShadowWorktree(repo, shadow.path, repo.head)
    finally:
        (shadow.path / ".git").unlink()
        repo.git.run("worktree", "prune", check=False)
        subprocess.run(["rm", "-rf", str(shadow.path)], check=True)


@requires_containment
def test_an_empty_repository_planted_below_the_root_does_not_break_fingerprints(
    committed_repo: Repo,
) -> None:
    """git cannot add an empty nested repository: a contained command making one must
    not turn every later validation into an unknown outcome."""
    with executor(committed_repo.root, validation_command="true") as ex:
        made = ex.execute(call("command_run", command="mkdir sub && cd sub && git init -q"))
        first = ex.execute(call("project_validate"))
        second = ex.execute(call("project_validate"))
    assert made.ok and first.ok and second.ok, (made, first, second)
    assert first.output is not None and second.output is not None
    assert first.output["fingerprint"] == second.output["fingerprint"]


def test_the_users_own_clean_filter_still_makes_the_snapshot(
    committed_repo: Repo, marks: Path, tmp_path: Path
) -> None:
    """The other side of the line: the user's configuration is trusted for the main work
    tree, so their clean filter (an nbstripout, say) still shapes T0."""
    committed_repo.git("config", "filter.strip.clean", f"sh -c 'touch {marks}/ran; grep -v SECRET'")
    committed_repo.write(".gitattributes", "*.txt filter=strip\n")
    committed_repo.write("n.txt", "keep\nSECRET\n")
    (tmp_path / "scratch").mkdir()
    snap = take_snapshot(discover(committed_repo.root), "run-filter", tmp_path / "scratch")
    assert committed_repo.git("show", f"{snap.commit}:n.txt") == "keep\n"
    assert (marks / "ran").exists()
