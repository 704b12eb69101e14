"""Fixed values of tidegate's git calls (identity, untrusted environment, filter keys,
the empty index) and configuration values read the way git reads them."""

from __future__ import annotations

import os

CORE_SETTINGS = r"^core\.(ignorecase|precomposeunicode|autocrlf|eol)$"
"""The settings ``Git.core_settings`` reads: path folding (candidate builds) and line-ending
conversion (apply-back)."""


def last_value(settings: dict[str, list[str | None]], key: str) -> str:
    """The value git uses (the last one given; a key without a value means "true")."""
    values = settings.get(key)
    if not values:
        return ""
    return "true" if values[-1] is None else str(values[-1])


def git_bool(value: str | None) -> bool:
    """A config value as ``git config --type=bool`` reads it (a value it would refuse,
    such as ``maybe``, is False here: that command prints nothing for it)."""
    if value is None:
        return True
    text = value.strip().lower()
    if text in ("true", "yes", "on"):
        return True
    if text in ("false", "no", "off", ""):
        return False
    try:
        return int(text) != 0
    except ValueError:
        return False


IDENTITY = {
    "GIT_AUTHOR_NAME": "tidegate",
    "GIT_AUTHOR_EMAIL": "tidegate@localhost",
    "GIT_COMMITTER_NAME": "tidegate",
    "GIT_COMMITTER_EMAIL": "tidegate@localhost",
}

UNTRUSTED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
}
FILTER_KEYS = ("clean=", "smudge=", "process=", "required=false")


NO_INDEX = "/proc/self/tidegate-no-index"
"""A path no one can create (nothing can be created in ``/proc/self``; where there is no
``/proc``, its parent is missing): opening it fails with ENOENT, which git reads as an
empty index."""


def no_index() -> dict[str, str]:
    """The environment for a command that only compares trees (``diff-tree --raw`` or
    ``--name-only``): ``GIT_INDEX_FILE`` names an index that does not exist, which git
    reads as empty. Such commands still load the work tree's index otherwise (on 50,000
    files, ~8 ms a call) though nothing they print depends on it."""
    return {"GIT_INDEX_FILE": NO_INDEX}
