"""The user's pager for long text on their terminal, as git uses one.

Not a command run on anyone's behalf: it is the program the user named for reading
(``TIDEGATE_PAGER``, else ``GIT_PAGER``, else the user's own git ``core.pager`` -- their
global configuration, never a repository's, which anyone who wrote the repository could
have set --, else ``PAGER``, else ``less``), started only when
standard output is a terminal, with the text on its standard input and the terminal as
its output. ``LESS`` defaults to ``FRX`` as under git: a text that fits on one screen is
printed and less exits at once; colours pass through. An empty value or ``cat`` means no
pager; a pager that cannot start means the text is printed as it is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping

_NAMES = ("TIDEGATE_PAGER", "GIT_PAGER", "PAGER")


def pager_command(environ: Mapping[str, str], configured: str | None = None) -> str | None:
    """The pager command line the environment names (``configured``: the user's git
    ``core.pager``, between ``GIT_PAGER`` and ``PAGER``), or None for none."""
    for name in _NAMES:
        if name == "PAGER" and configured is not None:
            value = configured.strip()
            return None if value in ("", "cat") else value
        if name in environ:
            value = environ[name].strip()
            return None if value in ("", "cat") else value
    return "less"


def named_by_environment(environ: Mapping[str, str]) -> bool:
    """Whether ``TIDEGATE_PAGER`` or ``GIT_PAGER`` decides (git's configuration is then
    not asked)."""
    return any(name in environ for name in _NAMES[:2])


def page(text: str, configured: str | None = None) -> None:
    """Write ``text`` to standard output, through the pager when it is a terminal."""
    command = pager_command(os.environ, configured) if sys.stdout.isatty() else None
    if command is None or not text:
        sys.stdout.write(text)
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, env=env)
    except OSError:
        sys.stdout.write(text)
        return
    assert proc.stdin is not None
    # Ctrl-C belongs to the pager while it runs (less quits its search on it, not tidegate).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            proc.stdin.write(text.encode("utf-8", "surrogateescape"))
            proc.stdin.close()
        except BrokenPipeError:  # the user quit before reading it all
            pass
        proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
