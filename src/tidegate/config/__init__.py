"""Project configuration: ``[tool.tidegate]`` in ``pyproject.toml`` and ``.tidegate/config.toml``.

Two files, two authors. ``.tidegate/config.toml`` is the user's (local and untracked:
``.tidegate/`` is excluded from git); it sets the policy over the defaults. The
``[tool.tidegate]`` table of the committed ``pyproject.toml`` is the repository's, written
by whoever got a commit in, so it may tighten that policy, never loosen it (``tighten``,
one rule per key in ``TIGHTEN``)::

    [tool.tidegate.validate]          # in .tidegate/config.toml: [validate]
    max_files = 50                    # max_*: the repository may only lower them
    max_lines_added = 2000
    max_lines_removed = 2000
    max_bytes = 1048576
    allow_binary = false              # the repository may only set it false
    protected = [".github/workflows/**", ".env*"]  # the repository's globs are added
    comment_guard = true              # the repository may only set it true

    [tool.tidegate.containment]       # how VERIFY's command is confined
    mode = "auto"                     # "none" < "auto" < "required": it may only rise
    share = [".venv", "node_modules"] # ignored dirs visible read-only in the shadow
    env = ["JAVA_OPTS"]               # extra variables passed to commands (no secrets)
                                      # share, env: the repository may only leave out

    [tool.tidegate.shadow]            # mechanics: pool may only be turned off by the
    pool = false                      # repository; verify_layer it may set either way
    verify_layer = "auto"

    [tool.tidegate.tools]             # the model's workspace tools
    readable_secrets = [".env.test"]  # secret-shaped files the model may read anyway
                                      # (the repository may only leave out)

    [tool.tidegate.run]               # defaults for run/review/debug
    verify = "python -m pytest -q"    # when no --verify is given: the user's file names
                                      # the user's command; the repository's is a command
                                      # the repository chose (it runs with origin
                                      # "repository": contained, or with approval)

    [model]                           # only in .tidegate/config.toml: see
                                      # tidegate.models.settings

A setting the repository may not loosen is ignored, and ``LoadedConfig.ignored`` says so
in one line each (a run's report carries them as notes). A ``.tidegate/config.toml`` git
tracks came with the repository (an exclude keeps out untracked files only), so it counts
as the repository's; and it is read without following a link, at ``.tidegate`` or at the
file. Unknown keys are refused in either file, naming it, so a typo never silently
weakens a limit.

A run reads the policy once (``load_policy``), and no change a run proposes may touch
``.tidegate/`` or alter the ``[tool.tidegate]`` table (``policy_table_change`` is the
comparison the engine and the tool host share).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tidegate.config.local_file import read_local, tracked
from tidegate.config.records import (
    CONFIG_LOCAL,
    CONFIG_PYPROJECT,
    PYPROJECT_TABLE,
    ConfigSource,
    LoadedConfig,
    TidegateConfig,
    validated,
)
from tidegate.config.tighten import tighten
from tidegate.errors import UsageError


def load_config(root: Path) -> TidegateConfig:
    """Read the repository's configuration (defaults when there is none)."""
    return load_policy(root).config


def load_policy(root: Path) -> LoadedConfig:
    """The configuration and the files it came from, each read exactly once.

    The user's file sets the policy over the defaults; each of the repository's tables
    (``pyproject.toml``'s, and a tracked ``.tidegate/config.toml``) then tightens it.
    UsageError, naming the file, for a file that cannot be read or a bad setting.

    A run calls this once, at bootstrap, on the user's work tree; nothing reads it again
    from a shadow or a candidate, so a change under test cannot alter its own policy."""
    sources: list[ConfigSource] = []
    ignored: list[str] = []
    repository: list[tuple[dict[str, Any], str]] = []
    users = TidegateConfig()
    pyproject = root / CONFIG_PYPROJECT
    if pyproject.is_file():
        data = _read_bytes(pyproject)
        section = _parse_toml(pyproject, data).get("tool", {}).get("tidegate")
        if section is not None:
            repository.append((_table(section, f"{pyproject} [tool.tidegate]"), PYPROJECT_TABLE))
            sources.append(ConfigSource(CONFIG_PYPROJECT, hashlib.sha256(data).hexdigest()))
    local = read_local(root)
    if local.problem is not None:
        ignored.append(local.problem)
    if local.data is not None:
        table = _table(_parse_toml(root / CONFIG_LOCAL, local.data), str(root / CONFIG_LOCAL))
        if tracked(root):
            ignored.append(
                f"{CONFIG_LOCAL} is tracked by git: it came with the repository, so it may "
                "only tighten tidegate's policy (`git rm --cached` it to make it yours)"
            )
            repository.append((table, f"{CONFIG_LOCAL} (tracked)"))
        else:
            users = validated(table, CONFIG_LOCAL)
        sources.append(ConfigSource(CONFIG_LOCAL, hashlib.sha256(local.data).hexdigest()))
    config = users
    named: tuple[str, str] | None = None
    for table, source in repository:
        table, verify = _without_run(table, source)
        if verify is not None and named is None:
            named = (verify, source)
        config, dropped = tighten(config, table, source)
        ignored += dropped
    return LoadedConfig(config, tuple(sources), tuple(ignored), repository_verify=named)


def _without_run(table: dict[str, Any], source: str) -> tuple[dict[str, Any], str | None]:
    """The repository's table without its ``[run] verify``, and the command it names. The repository may name a command (it then runs as the repository's,
    ``tidegate.exec.guard``); it never replaces the user's."""
    if "run" not in table:
        return table, None
    checked = validated({"run": table["run"]}, source)
    rest = {k: v for k, v in table["run"].items() if k != "verify"}
    return {**table, "run": rest}, checked.run.verify


def _table(section: Any, source: str) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise UsageError(f"{source}: expected a table")
    return section


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    import tomllib  # only when a file is there to parse

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib has no depth limit: a nesting bomb
        raise UsageError(f"{path}: invalid TOML: nested too deeply") from exc
