"""``[tool.tidegate]`` in a ``pyproject.toml``'s bytes, and whether a change alters it."""

from __future__ import annotations

from typing import Any

from tidegate.config.records import CONFIG_PYPROJECT


def tidegate_table(data: bytes | None) -> dict[str, Any] | None:
    """The ``[tool.tidegate]`` table of a ``pyproject.toml``'s bytes, as ``load_policy``
    would read it (None: no file, or no table). ValueError when it cannot be parsed."""
    if data is None:
        return None
    import tomllib  # only when a file is there to parse

    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid TOML ({exc})") from exc
    except RecursionError as exc:
        raise ValueError("not valid TOML (nested too deeply)") from exc
    tool = parsed.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ValueError("its 'tool' key is not a table")
    table = tool.get("tidegate")
    if table is not None and not isinstance(table, dict):
        raise ValueError("its 'tool.tidegate' key is not a table")
    return table


def policy_table_change(old: bytes | None, new: bytes | None) -> str | None:
    """Why replacing ``pyproject.toml``'s ``old`` bytes with ``new`` alters tidegate's
    policy, or None when ``[tool.tidegate]`` parses to the same table on both sides.

    The rest of the file (dependencies, other tools' tables, comments, formatting) may
    change freely. A ``new`` side that cannot be parsed counts as a change: what the next
    run would read cannot be judged."""
    if old == new:
        return None
    try:
        before = tidegate_table(old)
    except ValueError:
        before = {"<unparseable>": True}
    try:
        after = tidegate_table(new)
    except ValueError as exc:
        return f"{CONFIG_PYPROJECT} would no longer parse ({exc}), so tidegate's policy in it cannot be checked"
    if before == after:
        return None
    return (
        f"{CONFIG_PYPROJECT}: the change alters [tool.tidegate], tidegate's own policy; "
        "only you may change it, outside a run"
    )
