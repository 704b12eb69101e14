"""How tidegate calls git: the scrubbed environment, the fixed safety overrides, and
``probe``, a read-only call that needs nothing but ``os``.

``tidegate.git.command`` (the code that runs git for everything else) builds every call from
the same two pieces. ``probe`` exists for the read-only fast path of ``tidegate runs``
and ``tidegate read`` (``tidegate.cli.quickread``), where importing ``subprocess`` would
cost more than git itself takes to answer.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

KEPT_GIT_VARS = frozenset(
    {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_ATTR_NOSYSTEM"}
)
"""The only inherited ``GIT_*`` variables a child sees: the user's choice of config files."""


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every git child gets: the caller's, minus redirections, plus safety."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in KEPT_GIT_VARS}
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "LC_ALL": "C",
        }
    )
    if extra:
        env.update(extra)
    return env


_SAFETY_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.splitIndex=false",
    "-c",
    "core.pager=cat",
    "-c",
    "credential.helper=",
    "-c",
    "advice.detachedHead=false",
    "-c",
    "color.ui=false",
    "-c",
    "core.askPass=",
    "-c",
    "protocol.allow=never",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.hooksPath=/dev/null",  # no hook can exist below a device file
)


DISCOVERY = (
    "rev-parse",
    "--is-bare-repository",
    "--is-inside-git-dir",
    "--absolute-git-dir",
    "--git-common-dir",
    "--show-toplevel",
    "--verify",
    "--quiet",
    "HEAD^{commit}",
)
"""All of finding a repository in one call. Its lines: bare?, inside the git dir?, the
git dir, the common dir, the top level, HEAD's commit. git prints them in that order and
stops at the first it cannot give: nothing outside a repository, two flags and two dirs
in a bare repository or a git dir (exit 128), all but HEAD before a first commit (exit 1)."""


def discovery_lines(out: str) -> list[str]:
    """``DISCOVERY``'s output as its lines, without the empty one after the last newline."""
    lines = out.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def probe(cwd: str, args: Sequence[str]) -> tuple[int, bytes]:
    """Run ``git ARGS`` as if started in ``cwd`` (``git -C``), with the scrubbed environment
    and the safety overrides, stdin and stderr on /dev/null; its exit status and stdout.

    For read-only commands only (rev-parse): no filter neutralising, no sandbox prefix.
    Raises OSError when git cannot be started."""
    argv = ["git", "-C", cwd, "--no-pager", *_SAFETY_CONFIG, *args]
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawnp(
            "git",
            argv,
            scrubbed_env(),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, write_end, 1),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    chunks = []
    try:
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)
