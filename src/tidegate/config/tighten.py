"""The rule between the two files: a repository may tighten the policy, never loosen it
(one rule per key in ``TIGHTEN``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidegate.config.records import CONFIG_LOCAL, TidegateConfig, validated

WHY_IGNORED = (
    f"a repository may tighten tidegate's policy, never loosen it; set it in {CONFIG_LOCAL}"
)
WHY_MODEL = (
    "model settings are yours alone (a repository's could send your API key to another "
    f"server, or change what --max-cost counts); set it in {CONFIG_LOCAL}"
)

WHY_RETENTION = (
    "how many runs tidegate keeps (what you can still undo or apply) is yours alone; "
    f"set it in {CONFIG_LOCAL}"
)

Outcome = tuple[Any, tuple[str, ...]]
"""The value in force, and what of the repository's value was ignored (`` = 'none'``,
`` entry 'JAVA_OPTS'``; empty: nothing)."""
Rule = Callable[[Any, Any], Outcome]
"""(the user's value, the repository's value) -> Outcome."""


def _shown(value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else repr(value)  # as TOML says it
    return text if len(text) <= 120 else text[:117] + "..."


def _lower(mine: int, theirs: int) -> Outcome:
    return (theirs, ()) if theirs <= mine else (mine, (f" = {_shown(theirs)}",))


def _stricter(*loosest_first: object) -> Rule:
    def rule(mine: object, theirs: object) -> Outcome:
        if loosest_first.index(theirs) >= loosest_first.index(mine):
            return theirs, ()
        return mine, (f" = {_shown(theirs)}",)

    return rule


def _union(mine: tuple[str, ...], theirs: tuple[str, ...]) -> Outcome:
    return mine + tuple(e for e in dict.fromkeys(theirs) if e not in mine), ()


def _narrow(mine: tuple[str, ...], theirs: tuple[str, ...]) -> Outcome:
    """Only entries the user's list has (compared as written): the repository's list can
    leave some out, not add any."""
    kept = tuple(e for e in mine if e in theirs)
    return kept, tuple(f" entry {_shown(e)}" for e in dict.fromkeys(theirs) if e not in mine)


def _either(mine: object, theirs: object) -> Outcome:
    return theirs, ()


def _users_only(mine: object, theirs: object) -> Outcome:
    return mine, (() if theirs == mine else (f" = {_shown(theirs)}",))


TIGHTEN: dict[str, Rule] = {
    "validate.max_files": _lower,
    "validate.max_lines_added": _lower,
    "validate.max_lines_removed": _lower,
    "validate.max_bytes": _lower,
    "validate.allow_binary": _stricter(True, False),
    "validate.protected": _union,
    "validate.comment_guard": _stricter(False, True),
    # Keeping a copy of the work tree (untracked files too) on disk between runs is the
    # user's decision; the repository may only keep it from happening.
    "shadow.pool": _stricter(True, False),
    # Mechanics, not policy: the change that APPLY_BACK writes is computed before VERIFY,
    # containment is the same either way, and an unlayered command only makes the next
    # cleaning a full one. The repository knows whether its build renames directories.
    "shadow.verify_layer": _either,
    "containment.mode": _stricter("none", "auto", "required"),
    "containment.share": _narrow,  # each share exposes more of the main tree
    "containment.env": _narrow,  # each variable is something a command can send away
    "tools.readable_secrets": _narrow,
    # A committed base URL or key variable would send the user's API key elsewhere; a
    # price or a limit sets what --max-cost enforces. Only the user's file sets them.
    "model": _users_only,
    # A repository's [run] verify is taken out before these rules (``load_policy``): it is
    # a command the repository chose, run as such, and never replaces the user's.
    "run.verify": _users_only,
    "run.verify_timeout": _users_only,  # the user's patience, not the repository's
    # Neither direction is "tighter": fewer runs kept is less to undo with, more is more
    # of the user's disk. How much history to keep is the user's alone.
    "retention.runs": _users_only,
    "retention.undo_max_days": _users_only,
    "retention.undo_max_bytes": _users_only,
}
"""How a setting from the repository's ``[tool.tidegate]`` combines with the user's value
(the local file's, else the default), by dotted key; a nested key follows the nearest
enclosing one, and a key with no rule is the user's only."""


def _rule(path: tuple[str, ...]) -> Rule:
    for end in range(len(path), 0, -1):
        if (rule := TIGHTEN.get(".".join(path[:end]))) is not None:
            return rule
    return _users_only


def _leaves(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, Mapping):
            out += _leaves(value, path)  # an empty table sets nothing
        else:
            out.append(path)
    return out


_MISSING = object()


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def tighten(
    users: TidegateConfig, table: Mapping[str, Any], source: str
) -> tuple[TidegateConfig, tuple[str, ...]]:
    """``users`` with each setting of the repository's ``table`` that tightens it applied;
    one line for each one that would have loosened it, naming ``source``. UsageError when
    the table itself is not a valid configuration."""
    theirs = validated(table, source).model_dump(by_alias=True)
    values = users.model_dump(by_alias=True)
    ignored: list[str] = []
    for path in _leaves(table):
        mine = _get(values, path)
        value, dropped = _rule(path)(mine, _get(theirs, path))
        if value is not mine and value is not _MISSING:
            _set(values, path, value)
        why = {"model": WHY_MODEL, "retention": WHY_RETENTION}.get(path[0], WHY_IGNORED)
        ignored += [f"{source} {'.'.join(path)}{what} ignored: {why}" for what in dropped]
    return TidegateConfig.model_validate(values), tuple(ignored)
