"""git.exec: read-only git subcommands, in three layers.

1. The allowlist (``tidegate.tools.git_allowlist``, also the policy's rule): the argv is
   parsed as git parses it and rebuilt; what runs is that rebuilt argv, never the model's
   words (``--no-ext-diff --no-textconv`` added where git has them).
2. The repository is the one the context pinned when it was made (``GIT_DIR`` and
   ``GIT_WORK_TREE``: a ``.git`` planted later is not discovered; a workspace that was not
   in a repository then has none now) and git reads only that repository's own
   configuration, with its filter drivers neutralised (``Git(untrusted=True)``), and
   uncontained it reads a copy of the index (``git diff`` would rewrite the real one).
3. Containment: unless the context's containment is ``none``, git runs in the read-only
   bubblewrap view of ``exec.git_sandbox`` (the repository read-only, nothing else of the
   filesystem, no network); ``required`` refuses to run without it. ``contained`` in the
   output says which happened.

Output is bounded; a ``diff`` whose whole patch fits is complete, and only then is a
``diff_review`` claimed, with the digest of the exact bytes and the paths named by the
patch's own headers.

Secret-shaped files stay withheld here too (``tools.git_secrets``): git is kept from
reading them at all. diff, log, show and grep run with pathspec exclusions for every
secret name (``withheld`` in the output says so); an object named by a withheld path
(``HEAD:.env``, ``:0:.npmrc``) or a blob id git finds only at one is refused.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import msgspec

from tidegate.exec.git_sandbox import git_sandbox_prefix
from tidegate.git.command import Git
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.context import ToolContext
from tidegate.tools.effects import DiffReviewEffect, Effects, InspectEffect
from tidegate.tools.git_allowlist import Refused, canonical
from tidegate.tools.git_secrets import Withheld, plan
from tidegate.tools.schemas.git import GitInput, GitOutput
from tidegate.workspace.states import sha256_bytes

# The options a diff may carry and still be the whole patch, as ``git diff`` would show it
# to a person: presentation only. Anything else (a summary such as --stat, a filter such
# as --diff-filter or -S, -R, --word-diff, whitespace-ignoring) is an inspection, never a
# complete diff. The argv is the allowlist's rebuilt one, so every spelling is canonical.
_NEUTRAL = frozenset({"--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty",
                      "--patch", "--binary", "--full-index", "--no-color", "--color=never",
                      "--no-renames", "--minimal", "--patience", "--histogram",
                      "--indent-heuristic", "--no-indent-heuristic",
                      "--end-of-options", "-u"})  # fmt: skip
_NEUTRAL_VALUED = ("--unified=", "--find-renames", "--diff-algorithm=", "--abbrev")
_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)


def _is_full_diff(argv: list[str]) -> bool:
    if argv[0] != "diff":
        return False
    options = argv[1 : argv.index("--end-of-options")] if "--end-of-options" in argv else argv[1:]
    if "--" in options:
        options = options[: options.index("--")]
    return all(a in _NEUTRAL or a.startswith(_NEUTRAL_VALUED) for a in options)


class GitExec(msgspec.Struct):
    tool_id: str = "git.exec"
    label: str | None = None
    object_paths: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    """Per git dir, the object -> path map git.exec's secret check read last (not in
    ``repr``)."""

    def __repr__(self) -> str:
        return f"GitExec(tool_id={self.tool_id!r}, label={self.label!r})"

    def run(self, args: GitInput, call: Dispatch) -> AdapterResult:
        verdict = canonical(args.args)
        if isinstance(verdict, Refused):
            raise ToolFailure("git_refused", verdict.reason)
        git, contained = _git_for(call.context)
        try:
            known = self.object_paths.setdefault(str(git.git_dir), {})
            planned = plan(verdict, git, call.context.workspace.secrets, known)
        except Withheld as exc:
            raise ToolFailure("secret_withheld", str(exc)) from exc
        argv = list(planned.argv)
        with tempfile.TemporaryDirectory(prefix="tidegate-git-exec-") as scratch:
            res = git.run(*argv, env=_index_copy(git, Path(scratch)), check=False)
        data = res.stdout
        truncated = len(data) > args.max_bytes
        shown = data[: args.max_bytes]
        complete = _is_full_diff(argv) and not truncated and res.returncode in (0, 1)
        claims = [InspectEffect(kind="git", scope=" ".join(argv)[:500], truncated=truncated)]
        diff = None
        if complete:
            paths = tuple(
                dict.fromkeys(
                    m.group(2).decode("utf-8", "surrogateescape") for m in _HEADER.finditer(data)
                )
            )
            diff = DiffReviewEffect(argv=tuple(argv), diff_sha256=sha256_bytes(data), paths=paths)
        output = GitOutput(
            argv=argv,
            exit_code=res.returncode,
            stdout=shown.decode("utf-8", "replace"),
            stderr=res.stderr[-8000:],
            truncated=truncated,
            complete_diff=complete,
            contained=contained,
            withheld=planned.left_out,
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=tuple(claims), diff_review=diff))


def _git_for(ctx: ToolContext) -> tuple[Git, bool]:
    """The pinned, untrusted git of the context's repository, sandboxed when possible."""
    view = ctx.git_view
    if view is None:
        raise ToolFailure(
            "not_a_repository",
            "the workspace was not inside a git work tree when the session started",
            retryable=False,
        )
    pinned = view.git
    assert pinned.git_dir is not None  # git_view pins every view
    prefix = None
    if ctx.containment != "none":
        prefix = git_sandbox_prefix(_repository_paths(view.top, pinned.git_dir), ctx.root)
        if prefix is None and ctx.containment == "required":
            raise ToolFailure(
                "containment_unavailable",
                "containment is required but bubblewrap did not pass its probe",
                retryable=False,
            )
    git = Git(
        ctx.root,
        git_dir=pinned.git_dir,
        work_tree=view.top,
        untrusted=True,
        prefix=prefix or (),
    )
    return git, prefix is not None


def _index_copy(git: Git, scratch: Path) -> dict[str, str]:
    """``GIT_INDEX_FILE`` for a copy of the index (mtime kept, so racy entries are judged
    alike): ``git diff`` refreshes and rewrites the index it reads even under
    ``GIT_OPTIONAL_LOCKS=0`` (git 2.39), and the user's index is never tidegate's to write.
    Inside the sandbox the real one is read-only anyway, and the copy is not bound."""
    if git.prefix or git.git_dir is None or not (git.git_dir / "index").exists():
        return {}
    copy = scratch / "index"
    shutil.copy2(git.git_dir / "index", copy)
    return {"GIT_INDEX_FILE": str(copy)}


def _repository_paths(top: Path, git_dir: Path) -> list[Path]:
    """The work tree, the git dir and (for a linked work tree) the common git dir."""
    paths = [top, git_dir]
    common = git_dir / "commondir"
    if common.is_file():
        target = Path(common.read_text().strip())
        paths.append(target if target.is_absolute() else git_dir / target)
    return paths
