"""Named terminal recipes: terminal objectives shipped as package data
(``tidegate/operator/recipes/<name>.tidegate-terminal``). Names are lowercase ASCII
letters, digits and hyphens; anything else, or an unknown name, is refused."""

from __future__ import annotations

import re
from importlib import resources

from tidegate.operator.errors import OperatorError

SUFFIX = ".tidegate-terminal"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _folder() -> resources.abc.Traversable:
    return resources.files("tidegate.operator") / "recipes"


def recipe_names() -> list[str]:
    return sorted(
        entry.name[: -len(SUFFIX)]
        for entry in _folder().iterdir()
        if entry.name.endswith(SUFFIX) and _NAME.match(entry.name[: -len(SUFFIX)])
    )


def recipe_text(name: str) -> str:
    if not _NAME.match(name):
        raise OperatorError(f"recipe name {name!r}: only lowercase letters, digits and hyphens")
    if name not in recipe_names():
        raise OperatorError(f"unknown recipe {name!r}; shipped: {', '.join(recipe_names())}")
    return (_folder() / f"{name}{SUFFIX}").read_text(encoding="utf-8")


def recipe_summary(name: str) -> str:
    first = recipe_text(name).splitlines()[0] if recipe_text(name) else ""
    return first.lstrip("# ").split(":", 1)[-1].strip()
