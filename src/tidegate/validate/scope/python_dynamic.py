"""Whether a Python module may create globals its source does not show."""

from __future__ import annotations

import ast

# Calling one of these adds names to a module (``IntEnum._convert_`` adds its members).
_DYNAMIC_ATTRIBUTES = frozenset({"_convert_", "_convert"})
# What may be done with ``globals()`` without adding names to the module.
_READ_ONLY_METHODS = frozenset(
    {"get", "copy", "items", "keys", "values", "__contains__", "__getitem__"}
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def dynamic_globals(tree: ast.Module) -> str | None:
    """Why the module's global names may not all be visible in its source, or None.

    A star import; ``exec``; ``__builtins__``; ``globals()`` used other than to read
    (``globals()[k]``, ``.get``, ``in globals()`` ...); ``vars()``/``locals()`` at module level;
    ``sys.modules[__name__]``; assigning attributes of (or ``setattr`` on) an imported
    ``builtins``; ``Enum._convert_``.
    """
    builtins_names: set[str] = set()
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return f"has a star import (line {node.lineno})"
        if isinstance(node, ast.Import):
            builtins_names.update(a.asname or a.name for a in node.names if a.name == "builtins")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in _DYNAMIC_ATTRIBUTES:
                return f"calls {node.attr} (line {node.lineno})"
            value = node.value
            stored = isinstance(node.ctx, ast.Store)
            if stored and isinstance(value, ast.Name) and value.id in builtins_names:
                return f"assigns to builtins (line {node.lineno})"
        elif isinstance(node, ast.Subscript):
            value = node.value
            modules = isinstance(value, ast.Attribute) and value.attr == "modules"
            if modules and any(
                isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node)
            ):
                return f"indexes sys.modules[__name__] (line {node.lineno})"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            name = node.id
            parent = parents.get(node)
            called = isinstance(parent, ast.Call) and parent.func is node
            if name in ("exec", "__builtins__"):
                return f"uses {name} (line {node.lineno})"
            if name == "setattr" and called and isinstance(parent, ast.Call) and parent.args:
                target = parent.args[0]
                if isinstance(target, ast.Name) and target.id in builtins_names:
                    return f"sets attributes of builtins (line {node.lineno})"
            if name == "globals" and not (called and _read_only(parent, parents)):
                return f"writes through globals() (line {node.lineno})"
            bare_call = called and isinstance(parent, ast.Call) and not parent.args
            if name in ("locals", "vars") and bare_call and _at_module_level(node, parents):
                return f"uses {name}() at module level (line {node.lineno})"
    return None


def _read_only(call: ast.AST | None, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether the value of ``globals()`` is only read: indexed, compared, or asked for."""
    user = parents.get(call) if call is not None else None
    if isinstance(user, ast.Subscript) and user.value is call:
        return isinstance(user.ctx, ast.Load)
    if isinstance(user, ast.Attribute):
        return user.attr in _READ_ONLY_METHODS
    return isinstance(user, ast.Compare)


def _at_module_level(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    current: ast.AST | None = parents.get(node)
    while current is not None:
        if isinstance(current, _FUNCTIONS):
            return False
        current = parents.get(current)
    return True
