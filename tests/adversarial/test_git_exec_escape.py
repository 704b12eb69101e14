"""A model or MCP client uses git.exec to run a program, read outside the repository, or
write files: every spelling git itself would accept is refused before git starts.

Each payload is first shown to be live: the same argv given to plain git does run the
marker command (or read the outside file). Then, through the real tool executor, the call
is denied with a reason, the marker does not exist and the work tree and ``.git/index``
are byte-identical. Both with the read-only sandbox (containment ``auto``) and without it
(``none``: the allowlist alone holds).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.exec.git_sandbox import git_sandbox_prefix
from tidegate.git.command import Git
from tidegate.tools.policy import ApprovalProfile, TaskMode

# {run} is a shell command that creates the marker; {file} a file outside the repository.
RUNS_A_PROGRAM = [
    ["grep", "-iO{run}", "hello"],  # bundled short options: -i -O <cmd>
    ["grep", "--open-files-in-pag={run}", "hello"],  # abbreviated long option
    ["grep", "--open={run}", "hello"],
    ["-c", "core.pager={run}", "log"],
    ["-p", "log"],  # --paginate as a global option
    ["log", "-p", "--ext-diff"],
    ["diff", "--ext-d"],
]
READS_OUTSIDE = [
    ["blame", "--cont={file}", "a.txt"],
    ["blame", "--contents", "{file}", "a.txt"],
    ["blame", "--ignore-revs-f={file}", "a.txt"],
    ["grep", "-f", "{file}"],
    ["grep", "-hf{file}"],
    ["diff", "--no-index", "{file}", "a.txt"],
    ["diff", "{file}", "a.txt"],  # implicit --no-index: one path outside the work tree
    ["diff", "--no-i", "{file}", "a.txt"],
    ["ls-files", "--exclude-from={file}", "-o"],
    ["log", "-O{file}", "-p"],
    ["log", "--git-dir={dir}"],
    ["--git-dir={dir}", "log"],
    ["log", "--exec-path={dir}"],
    ["--work-tree={dir}", "status"],
    ["log", "--", "../../outside"],
]
WRITES_FILES = [
    ["diff", "--output={out}"],
    ["diff", "--out={out}"],
    ["log", "-p", "--outp={out}"],
    ["show", "--output", "{out}"],
    ["diff", "--end-of-options", "--output={out}"],  # an operand that is really an option
    ["log", "--output-indicator-new=x", "--output={out}"],
    ["branch", "pwned-branch"],
    ["branch", "-f", "main"],
    ["commit", "-m", "x"],
    ["cat-file", "--filters", "HEAD:a.txt"],
    ["show", "--textconv", "HEAD:a.txt"],
    ["log", "--pretty=format:%G?"],  # runs the configured gpg program
]


def _fill(argv: list[str], **values: str) -> list[str]:
    return [a.format(**values) for a in argv]


@pytest.fixture
def target(committed_repo: Repo) -> Repo:
    committed_repo.write("a.txt", "hello\n")
    committed_repo.commit_all("a.txt")
    committed_repo.write("a.txt", "hello\nworld\n")  # a change for diff/grep to see
    return committed_repo


def _snapshot(repo: Repo) -> tuple[object, bytes]:
    return repo.tree_state(), repo.index_bytes()


def _denied(repo: Repo, argv: list[str], containment: str) -> str:
    with executor(repo.root, mode=TaskMode.REVIEW, containment=containment) as ex:
        result = ex.execute(call("git_exec", args=argv))
    assert result.status == "denied", result
    assert result.error is not None and result.error.message
    return result.error.message


@pytest.mark.parametrize("containment", ["auto", "none"])
@pytest.mark.parametrize("argv", RUNS_A_PROGRAM, ids=" ".join)
def test_no_spelling_runs_a_program(
    target: Repo, tmp_path: Path, argv: list[str], containment: str
) -> None:
    marker = tmp_path / "pwned"
    run = f"touch {marker}; cat >/dev/null; true"
    if argv[0] != "-p":  # plain git, not a pager we can make from a tty-less test
        live = _fill(argv, run=run)
        if "--ext-d" in argv or "--ext-diff" in argv:
            target.git("config", "diff.external", f"sh -c 'touch {marker}'")
            live = ["--ext-diff" if a == "--ext-d" else a for a in live]
        subprocess.run(["git", *live], cwd=target.root, capture_output=True, check=False)
        if argv[0] != "-c":  # core.pager needs a terminal; the others ran
            assert marker.exists(), f"the payload {live} is not live"
        marker.unlink(missing_ok=True)
    before = _snapshot(target)
    reason = _denied(target, _fill(argv, run=run), containment)
    assert "not allowed" in reason or "not an allowed subcommand" in reason, reason
    assert not marker.exists()
    assert _snapshot(target) == before


@pytest.mark.parametrize("containment", ["auto", "none"])
@pytest.mark.parametrize("argv", READS_OUTSIDE, ids=" ".join)
def test_nothing_outside_the_repository_is_read(
    target: Repo, tmp_path: Path, argv: list[str], containment: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hello secret\n")
    other = tmp_path / "other"
    other.mkdir()
    before = _snapshot(target)
    _denied(target, _fill(argv, file=str(secret), dir=str(other)), containment)
    assert _snapshot(target) == before


@pytest.mark.parametrize("containment", ["auto", "none"])
@pytest.mark.parametrize("argv", WRITES_FILES, ids=" ".join)
def test_nothing_is_written(
    target: Repo, tmp_path: Path, argv: list[str], containment: str
) -> None:
    out = tmp_path / "written"
    before = _snapshot(target)
    refs = target.git("for-each-ref")
    _denied(target, _fill(argv, out=str(out)), containment)
    assert not out.exists()
    assert _snapshot(target) == before and target.git("for-each-ref") == refs


@pytest.mark.parametrize("spelling", ["--output=a.txt", "--out=a.txt", "--o=a.txt"])
def test_review_mode_cannot_overwrite_a_work_tree_file(target: Repo, spelling: str) -> None:
    """The audit's review-mode finding: diff --output aimed at a tracked file."""
    before = _snapshot(target)
    _denied(target, ["diff", spelling], "none")
    assert _snapshot(target) == before
    assert target.read("a.txt") == "hello\nworld\n"


def test_a_revision_cannot_become_an_option(target: Repo, tmp_path: Path) -> None:
    out = tmp_path / "o"
    for argv in (["log", f"--output={out}"], ["show", "--end-of-options", f"--output={out}"]):
        reason = _denied(target, argv, "none")
        assert "option" in reason
    # after '--' the same word is a path, and git is told so
    with executor(target.root, containment="none") as ex:
        result = ex.execute(call("git_exec", args=["log", "--", f"--output={out}"]))
    assert result.ok and result.output is not None, result
    argv = result.output["argv"]
    assert argv[argv.index("--") :][:2] == ["--", f"--output={out}"]  # then the exclusions
    assert not out.exists()


def test_repository_config_programs_do_not_run(target: Repo, tmp_path: Path) -> None:
    """Allowed calls on a repository whose config names programs run none of them."""
    marker = tmp_path / "ran"
    touch = f"sh -c 'touch {marker}; cat'"
    target.git("config", "diff.external", touch)
    target.git("config", "diff.t.textconv", touch)
    target.git("config", "diff.t.command", touch)
    target.git("config", "filter.x.clean", touch)
    target.git("config", "core.fsmonitor", touch)
    target.git("config", "core.pager", touch)
    (target.root / ".git" / "info").mkdir(exist_ok=True)
    (target.root / ".git" / "info" / "attributes").write_text("* diff=t filter=x\n")
    subprocess.run(["git", "diff"], cwd=target.root, capture_output=True, check=False)
    assert marker.exists(), "the repository's programs are live for plain git"
    marker.unlink()
    calls = [["diff"], ["log", "-p", "-1"], ["show", "HEAD"], ["blame", "a.txt"],
             ["status", "--porcelain"], ["grep", "hello"], ["diff", "--stat"]]  # fmt: skip
    for containment in ("none", "auto"):
        with executor(target.root, containment=containment) as ex:
            for argv in calls:
                result = ex.execute(call("git_exec", args=argv))
                assert result.ok, (argv, result)
                assert not marker.exists(), f"git {argv} ran a configured program"


@requires_containment
def test_the_sandbox_alone_stops_a_missed_case(target: Repo, tmp_path: Path) -> None:
    """Layer 3 without layer 1: an argv the allowlist would refuse, run straight through
    the sandboxed git, can neither write outside nor read outside the repository."""
    marker = tmp_path / "pwned"
    secret = tmp_path / "secret.txt"
    secret.write_text("hello secret\n")
    git_dir = target.root / ".git"
    prefix = git_sandbox_prefix([target.root, git_dir], target.root)
    assert prefix is not None, "bubblewrap is installed here and must pass its probe"
    attack = ["grep", f"--open-files-in-pager=touch {marker} {target.root}/in-repo;:", "hello"]
    plain = Git(target.root).run(*attack, check=False)
    assert plain.returncode == 0 and marker.exists(), "the payload is live uncontained"
    marker.unlink()
    (target.root / "in-repo").unlink()
    before = _snapshot(target)
    boxed = Git(target.root, git_dir=git_dir, work_tree=target.root, prefix=prefix)
    boxed.run(*attack, check=False)
    assert not marker.exists() and not (target.root / "in-repo").exists()
    assert _snapshot(target) == before
    read = boxed.run("diff", "--no-index", str(secret), "a.txt", check=False)
    assert b"secret" not in read.stdout and "Could not access" in read.stderr


@requires_containment
def test_strict_asks_for_uncontained_git(target: Repo) -> None:
    with executor(target.root, approval=ApprovalProfile.STRICT, containment="none") as ex:
        uncontained = ex.execute(call("git_exec", args=["status"]))
    with executor(target.root, approval=ApprovalProfile.STRICT, containment="auto") as ex:
        contained = ex.execute(call("git_exec", args=["status"]))
    assert uncontained.status in ("denied", "pending_approval"), uncontained
    assert contained.ok and contained.output is not None and contained.output["contained"]


@pytest.mark.parametrize("containment", [pytest.param("auto", marks=requires_containment), "none"])
def test_ordinary_reads_keep_working(target: Repo, containment: str) -> None:
    head = target.git("rev-parse", "HEAD").strip()
    cases: list[tuple[list[str], str]] = [
        (["diff"], "+world"),
        (["diff", "--name-o"], "a.txt"),  # an unambiguous abbreviation
        (["log", "-n", "5", "--oneline"], "a.txt"),
        (["log", "-n5", "--format", "%s"], "a.txt"),
        (["log", "-1", "--format=%H"], head),
        (["show", "HEAD:a.txt"], "hello"),
        (["status", "--porcelain"], " M a.txt"),
        (["status", "-sb"], "## "),
        (["rev-parse", "HEAD"], head),
        (["rev-parse", "--show-toplevel"], str(target.root.resolve())),
        (["blame", "-s", "a.txt"], "hello"),
        (["grep", "-n", "hello"], "a.txt:1:hello"),
        (["grep", "-e", "-not-an-option"], ""),
        (["ls-files"], "a.txt"),
        (["ls-tree", "--name-only", "HEAD"], "a.txt"),
        (["cat-file", "-t", "HEAD"], "commit"),
        (["branch", "--list"], "main"),
        (["diff", "HEAD", "--", "a.txt"], "+world"),
    ]
    with executor(target.root, containment=containment) as ex:
        for argv, expected in cases:
            result = ex.execute(call("git_exec", args=argv))
            assert result.ok and result.output is not None, (argv, result)
            assert expected in result.output["stdout"], (argv, result.output)
            assert result.output["contained"] is (containment == "auto")
