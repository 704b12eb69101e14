"""Scope integrity of a changed file: names the change left dangling.

Two checks, both only about problems the change introduced:

(a) **removed definition still used**: a name bound at module level before the change (a
    function, a class, an assignment target, an import ...) that is bound nowhere at module
    level after it (renamed or removed), while the file still reads it as a bare name that
    resolves to module scope (not to a local, a parameter or an enclosing function's name;
    a class body's names are not seen by its methods, as in Python). One problem per name,
    at its first reference, listing the other lines.
(b) **new use of an undefined name**: a bare name read on a line the change added or
    replaced, that is bound nowhere in the file (in any scope, at any level, before or after
    its use: assignments, ``def``/``class``, imports, parameters, comprehension and ``for``
    targets, ``with``/``except ... as``, walrus, ``match`` captures, ``global``/``nonlocal``,
    ``del``, PEP 695 type parameters), is not a builtin, and was not already an undefined
    name in the file at T0.

Python is analysed with ``ast`` (a small model of module, function, class, comprehension
and type-parameter scopes). JavaScript and TypeScript get check (a) only, from the
tree-sitter tree, for the top-level declarations of modules.

A reported problem rejects the patch, so anything uncertain counts as defined. Limits (what
is *not* reported):

* Python: a file with ``from x import *``, or that may create globals dynamically
  (``exec``, writing through ``globals()``, ``vars()``/``locals()`` at module level,
  ``sys.modules[__name__]``, assigning to ``builtins``, ``Enum._convert_`` ... see
  :func:`dynamic_globals`), is not checked at all.
* Python: reads inside ``try:`` bodies with an ``except NameError`` or a bare ``except:``,
  inside ``if`` blocks that test a version (``sys.version_info``, ``PY2``, ``six.PY3``), and
  on lines marked ``# noqa``, ``# type: ignore`` or ``# pyright: ignore`` (bare, or naming
  F821, ``name-defined``, ``reportUndefinedVariable``).
* Python: builtins of any Python version (``unicode``, ``long``, ``ExceptionGroup`` ...),
  IPython's (``get_ipython``, ``display``), ``_`` (gettext), ``reveal_type`` count as defined.
* Python (b): a name bound anywhere in the file counts as defined everywhere, so using
  another function's local, a class attribute bare inside a method, or a name after ``del``
  is not reported; nor are names in string annotations.
* Python: a file this interpreter's ``ast`` cannot parse (a syntax error, or syntax newer
  than the running Python, e.g. PEP 695 type parameters on 3.11) is not scope-checked.
* JavaScript/TypeScript: only (a), only for top-level declarations, only in modules (a
  top-level ``import``/``export``, CommonJS ``require``/``module.exports``/``exports``, or a
  ``.mjs .cjs .mts .cts`` name: a script's declarations are globals another script may
  provide). A removed name is not reported if the file still mentions it other than as a
  plain read (a parameter, a declaration in any scope, an assignment target, ``typeof``, a
  destructuring pattern, an import ...), nor if it is a well-known global of browsers,
  Node.js or test runners. Type-only references (``x: Store``) are not reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidegate.validate.languages import (
    JAVASCRIPT,
    PYTHON,
    TSX,
    TYPESCRIPT,
    detect_language,
    parser_for,
)
from tidegate.validate.scope.lines import split_lines
from tidegate.validate.scope.problem import ScopeProblem
from tidegate.validate.scope.python import parse_python, python_scope_problems

if TYPE_CHECKING:
    from tree_sitter import Tree


def scope_problems(path: str, before: bytes | None, after: bytes) -> list[ScopeProblem]:
    """Scope problems the change from ``before`` (None: a new file) to ``after`` introduced
    in ``path``. Files that do not parse, and languages other than Python, JavaScript and
    TypeScript, yield nothing."""
    language = detect_language(path)
    if language == PYTHON:
        tree = parse_python(after)
        if tree is None:
            return []
        problems, _notes = python_scope_problems(lambda: before, tree, split_lines(after))
        return problems
    if language in (JAVASCRIPT, TYPESCRIPT, TSX):
        from tidegate.validate.scope.javascript import is_module_path, js_scope_problems

        parser = parser_for(language)
        after_tree = parser.parse(after)
        if after_tree.root_node.has_error:
            return []

        def before_tree() -> Tree | None:
            if before is None:
                return None
            tree = parser.parse(before)
            return None if tree.root_node.has_error else tree

        return js_scope_problems(before_tree, after_tree, is_module_path(path))
    return []
