"""The environment a command gets: an allowlist, never tidegate's whole environment.

tidegate's own process holds what it needs to talk to a model (``OPENAI_API_KEY``...), the
user's cloud credentials and tokens. A command (the verify command, ``command.run``, a
session, ``ledger record --run``) needs none of that: it gets only the names below, the
names the user passes through (``[containment] env`` in ``.tidegate/config.toml``; a
repository's ``[tool.tidegate.containment] env`` may only leave names out) and nothing that
is secret-shaped, whatever list it came from. Under bubblewrap, HOME and TMPDIR are then
pointed at the call's private directories.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from tidegate.text.sanitize import secret_name

PASSED = frozenset(
    {
        "PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "TERM", "COLORTERM",
        "NO_COLOR", "FORCE_COLOR", "TZ", "USER", "LOGNAME", "SHELL", "PWD", "SOURCE_DATE_EPOCH",
        "CI", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_VERSION",
        "PYENV_ROOT", "JAVA_HOME", "GOROOT", "GOPATH", "GOCACHE", "GOFLAGS", "GOTOOLCHAIN",
        "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "NODE_PATH", "NVM_DIR",
        "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "TIDEGATE_RUN_ID", "TIDEGATE_SHADOW",
    }
)  # fmt: skip
"""Names every command gets (when tidegate has them)."""
PASSED_PREFIXES = ("LC_", "PYTHON", "GIT_")
"""Families of names every command gets: locale, the interpreter's switches, and git's
settings (the redirecting ones are removed by ``tidegate.git.env.scrubbed_env`` already)."""

# Secret-shaped names are never passed, even when allowlisted or configured: the names
# that say so (``*_TOKEN``, ``*_PASSWORD``, ``*SECRET*``, ``*_API_KEY``) and whole
# families that carry credentials.
_NEVER = re.compile(
    r"(?i)^(?:AWS_|AZURE_|GOOGLE_APPLICATION_CREDENTIALS|GCP_|SSH_AUTH_SOCK$|.*KEY$"
    r"|.*SECRET|.*PASSWORD|.*PASSWD)"
)


def never_passed(name: str) -> bool:
    """Whether ``name`` is secret-shaped: such a variable never reaches a command."""
    return bool(_NEVER.match(name)) or secret_name(name)


def command_environment(
    base: Mapping[str, str] | None = None, passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """The allowlisted part of ``base`` (default: tidegate's environment), plus the names
    in ``passthrough``; never a secret-shaped name."""
    source = os.environ if base is None else base
    extra = frozenset(passthrough)
    return {
        name: value
        for name, value in source.items()
        if (name in PASSED or name.startswith(PASSED_PREFIXES) or name in extra)
        and not never_passed(name)
    }


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` (one a caller built on purpose) minus every secret-shaped name."""
    return {name: value for name, value in env.items() if not never_passed(name)}
