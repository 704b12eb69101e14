"""git.exec: read-only git subcommands through tidegate.git (argv lists, scrubbed env).

The allowlist is the policy's (``git_refusal``), checked again here so the adapter is safe
on its own. Diffs run with ``--no-ext-diff --no-textconv`` so repository configuration
cannot make git run a program. Output is bounded; a ``diff`` whose whole patch fits is
complete, and only then is a ``diff_review`` claimed, with the digest of the exact bytes
and the paths named by the patch's own headers.

Secret-shaped files stay withheld here too (``workspace.secret_files``): an argument that
names one (``.env``, ``HEAD:.env``) is refused, and the sections of a diff, show or log
and the lines of a grep that belong to one are cut from the output. (An object read by
its id, ``cat-file -p <blob>``, is not traced back to its path.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidegate.git import Git
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.effects import DiffReviewEffect, Effects, InspectEffect
from tidegate.tools.policy import git_refusal
from tidegate.tools.schemas.git import GitInput, GitOutput
from tidegate.workspace.secret_files import SecretFiles
from tidegate.workspace.states import sha256_bytes

_NO_PROGRAMS = ("--no-ext-diff", "--no-textconv")
_DIFF_LIKE = frozenset({"diff", "show", "log"})
# Options after which a diff's output is a summary, not the patch itself.
_SUMMARY_OPTIONS = (
    "--stat",
    "--numstat",
    "--shortstat",
    "--dirstat",
    "--name-only",
    "--name-status",
    "--summary",
    "--quiet",
    "--raw",
    "--compact-summary",
    "--check",
    "-s",
    "--no-patch",
)
_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)


_SECTION = re.compile(rb"(?=^diff --git )", re.MULTILINE)


def _without_secrets(sub: str, data: bytes, secrets: SecretFiles) -> bytes:
    """``data`` without the diff sections or grep lines of withheld files."""
    if sub in _DIFF_LIKE:
        kept = []
        for part in _SECTION.split(data):
            header = _HEADER.match(part)
            names = [header.group(1), header.group(2)] if header else []
            if not any(secrets.withheld(n.decode("utf-8", "surrogateescape")) for n in names):
                kept.append(part)
        return b"".join(kept)
    if sub == "grep":
        lines = data.splitlines(keepends=True)
        return b"".join(
            line
            for line in lines
            if not any(
                secrets.withheld(f.decode("utf-8", "surrogateescape")) for f in line.split(b":")[:2]
            )
        )
    return data


def _is_full_diff(argv: list[str]) -> bool:
    return argv[0] == "diff" and not any(a.startswith(_SUMMARY_OPTIONS) for a in argv[1:])


@dataclass
class GitExec:
    tool_id: str = "git.exec"
    label: str | None = None

    def run(self, args: GitInput, call: Dispatch) -> AdapterResult:
        argv = list(args.args)
        refusal = git_refusal(argv)
        if refusal is not None:
            raise ToolFailure("git_refused", refusal)
        secrets = call.context.workspace.secrets
        for arg in argv[1:]:
            if not arg.startswith("-") and any(
                secrets.withheld(p) for p in (arg, arg.partition(":")[2]) if p
            ):
                raise ToolFailure(
                    "secret_withheld",
                    f"{arg}: names a secret-shaped file, withheld from the model's tools",
                )
        if argv[0] in _DIFF_LIKE:
            argv = [argv[0], *_NO_PROGRAMS, *argv[1:]]
        res = Git(call.context.root).run(*argv, check=False)
        data = _without_secrets(argv[0], res.stdout, secrets)
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
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=tuple(claims), diff_review=diff))
