"""``tidegate init``: write the user's ``.tidegate/config.toml``, commented, with the verify
command detected from the repository's manifests.

The file is the user's own (``.tidegate/`` is excluded from git: the line is added to
``.git/info/exclude`` here as a run adds it). An existing file is never overwritten
without ``--force``; a tracked one never (it came with the repository). Nothing tracked and
nothing in the index is touched; no link is followed at ``.tidegate`` or at the file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import Annotated

import typer

from tidegate.cli.runcmd import EXIT_USAGE, guarded
from tidegate.text.sanitize import sanitize

_HEADER = """\
# tidegate's configuration for this work tree: yours alone (.tidegate/ is excluded from
# git). A repository's [tool.tidegate] in pyproject.toml may tighten this policy, never
# loosen it. Every key is documented in docs/commands.md ("Configuration").

[run]
# The verify command `tidegate run`, `review` and `debug` use when no --verify is given
# (`--verify none` runs without one). Set here, it is your own command.
"""

_REST = """
[validate]
# Limits every proposed change must stay within (a repository may only lower them).
# max_files = 200
# max_lines_added = 10000
# max_lines_removed = 10000
# max_bytes = 5242880
# allow_binary = false
# protected = [".github/workflows/**", ".env*"]   # paths no change may touch (defaults kept)

[containment]
# How the verify command is confined: "auto" (bubblewrap when it works), "required"
# (refuse to run it without bubblewrap), "none" (never: your approval to run uncontained).
# mode = "auto"
# share = [".venv", "node_modules"]   # ignored directories visible read-only in the shadow
# env = []                            # extra environment variables passed to commands

[shadow]
# pool = false   # keep one warm shadow between runs (fast on large repositories)

[retention]
# What tidegate keeps of past runs (`tidegate gc`); a repository cannot change it.
# runs = 50                   # the newest runs kept for apply/undo (held, paused: always)
# undo_max_days = 14          # the tool host's kept bytes (`undo --call/--session`)
# undo_max_bytes = 268435456
"""


def config_text(detected: tuple[str, str] | None) -> str:
    """The commented file ``init`` writes for what was ``detected`` (command, from where)."""
    if detected is None:
        verify = (
            "# Nothing was detected (no pytest, npm test script, go.mod or Cargo.toml).\n"
            '# verify = "make test"\n'
        )
    else:
        command, source = detected
        verify = f"# Detected from {source}:\nverify = {_toml_string(command)}\n"
    return _HEADER + verify + _REST


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def init_command(
    repo: Annotated[
        Path, typer.Option("--repo", help="The repository (default: current directory).")
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing .tidegate/config.toml.")
    ] = False,
) -> None:
    """Write .tidegate/config.toml (yours, untracked), commented, with the detected verify command."""
    raise typer.Exit(guarded(lambda: write_config(repo, force)))


def write_config(repo_path: Path, force: bool) -> int:
    from tidegate.config.local_file import tracked
    from tidegate.config.records import CONFIG_LOCAL
    from tidegate.config.verify import detect_verify
    from tidegate.workspace.repo import discover
    from tidegate.workspace.snapshot import ensure_excluded

    repo = discover(repo_path)
    root = repo.root
    target = root / CONFIG_LOCAL
    if tracked(root):
        return _refuse(f"{target} is tracked by git: it came with the repository; not written")
    excluded = ensure_excluded(repo)
    text = config_text(detect_verify(root))
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(".tidegate", 0o755, dir_fd=top)
        try:
            folder = os.open(
                ".tidegate", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top
            )
        except OSError:
            return _refuse(f"{root / '.tidegate'} is not a directory (a symlink?): not written")
        try:
            return _write(folder, target, text, force, excluded)
        finally:
            os.close(folder)
    finally:
        os.close(top)


def _write(folder: int, target: Path, text: str, force: bool, excluded: bool) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open("config.toml", flags | os.O_EXCL, 0o644, dir_fd=folder)
    except FileExistsError:
        if not force:
            return _refuse(f"{target} exists; not overwritten (--force to replace it)")
        try:
            fd = os.open("config.toml", flags, 0o644, dir_fd=folder)
        except OSError:
            return _refuse(f"{target} is not a regular file (a symlink?): not written")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return _refuse(f"{target} is not a regular file: not written")
        os.ftruncate(fd, 0)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    sys.stdout.write(sanitize(f"wrote {target}") + "\n")
    if not excluded:
        sys.stderr.write(
            "tidegate: warning: .git/info/exclude is not a plain file: add .tidegate/ to it "
            "yourself so git does not show the file\n"
        )
    return 0


def _refuse(message: str) -> int:
    sys.stderr.write(sanitize(f"tidegate: error: {message}") + "\n")
    return EXIT_USAGE
