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

import ast
import builtins
import difflib
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tree_sitter import Node, Tree

from tidegate.validate.languages import (
    JAVASCRIPT,
    PYTHON,
    TSX,
    TYPESCRIPT,
    detect_language,
    parser_for,
)

# --------------------------------------------------------------------------------------------
# What the change touched, line by line


@dataclass(frozen=True)
class LineDiff:
    """Line-level difference between two versions of a file (1-based line numbers).

    ``changed`` are the lines of the new version that the change added or replaced;
    ``same`` maps every other new line to the identical old line it corresponds to;
    ``hunks`` pairs each replaced old range with the new range that replaced it.
    """

    changed: frozenset[int]
    same: dict[int, int]
    hunks: tuple[tuple[range, range], ...]

    @classmethod
    def of(cls, before: Sequence[bytes] | None, after: Sequence[bytes]) -> LineDiff:
        if before is None:
            everything = range(1, len(after) + 1)
            return cls(frozenset(everything), {}, ((range(1, 1), everything),))
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changed: set[int] = set()
        same: dict[int, int] = {}
        hunks: list[tuple[range, range]] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(j2 - j1):
                    same[j1 + k + 1] = i1 + k + 1
            else:
                changed.update(range(j1 + 1, j2 + 1))
                hunks.append((range(i1 + 1, i2 + 1), range(j1 + 1, j2 + 1)))
        return cls(frozenset(changed), same, tuple(hunks))

    def old_range_of(self, line: int) -> range:
        """The old lines that the hunk containing new ``line`` replaced (empty if none)."""
        for old, new in self.hunks:
            if line in new:
                return old
        return range(0)


def split_lines(data: bytes) -> list[bytes]:
    """Lines as tree-sitter numbers them (split at ``\\n``; a trailing ``\\r`` is kept)."""
    return data.split(b"\n")


@dataclass(frozen=True, order=True)
class ScopeProblem:
    line: int
    column: int
    message: str


# --------------------------------------------------------------------------------------------
# Python

# Names that resolve without any binding in the file. Besides this interpreter's builtins:
# builtins of other Python versions and platforms, module and class attributes the runtime
# provides, names ``site`` adds, and ``_`` (gettext.install puts it in builtins).
PYTHON_IMPLICIT: frozenset[str] = frozenset(dir(builtins)) | {
    "__file__",
    "__name__",
    "__doc__",
    "__spec__",
    "__loader__",
    "__package__",
    "__path__",
    "__builtins__",
    "__annotations__",
    "__annotate__",
    "__conditional_annotations__",
    "__dict__",
    "__module__",
    "__qualname__",
    "__class__",
    "__cached__",
    "__debug__",
    "__build_class__",
    "__import__",
    "WindowsError",
    "ExceptionGroup",
    "BaseExceptionGroup",
    "EncodingWarning",
    "PythonFinalizationError",
    "_IncompleteInputError",
    "aiter",
    "anext",
    "copyright",
    "credits",
    "license",
    "exit",
    "quit",
    "help",
    "reveal_type",
    "reveal_locals",
    "_",
    # builtins that Python 2 compatibility code still names
    "unicode",
    "long",
    "basestring",
    "xrange",
    "raw_input",
    "unichr",
    "reduce",
    "file",
    "execfile",
    "cmp",
    "buffer",
    "apply",
    "intern",
    "coerce",
    "reload",
    "StandardError",
    # builtins of IPython / Jupyter, and ones announced for future Pythons
    "get_ipython",
    "display",
    "__IPYTHON__",
    "frozendict",
}

# Calling one of these adds names to a module (``IntEnum._convert_`` adds its members).
_DYNAMIC_ATTRIBUTES = frozenset({"_convert_", "_convert"})
# What may be done with ``globals()`` without adding names to the module.
_READ_ONLY_METHODS = frozenset(
    {"get", "copy", "items", "keys", "values", "__contains__", "__getitem__"}
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LEAVES = (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

_TYPE_PARAM_CLASSES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple"})


class _Scope:
    __slots__ = ("bound", "first_binding", "globals_", "kind", "parent")

    def __init__(self, kind: str, parent: _Scope | None) -> None:
        self.kind = kind  # module | function | class | comprehension
        self.parent = parent
        self.bound: set[str] = set()
        self.globals_: set[str] = set()
        self.first_binding: dict[str, int] = {}


@dataclass(frozen=True)
class _Load:
    name: str
    line: int
    column: int
    scope: _Scope
    guarded: bool  # inside ``try: ... except NameError:`` or a Python-version test


class PythonNames(ast.NodeVisitor):
    """Every binding and every bare-name read of a module, with the scope of each read."""

    _methods: ClassVar[dict[type[ast.AST], Callable[[PythonNames, Any], None]]] = {}

    def __init__(self) -> None:
        self.module = _Scope("module", None)
        self.scope = self.module
        self.loads: list[_Load] = []
        self.anywhere: set[str] = set()  # bound in some scope of the file, or declared
        self._guards = 0

    @classmethod
    def of(cls, tree: ast.AST) -> PythonNames:
        names = cls()
        names.visit(tree)
        return names

    # ---- bindings

    def _bind(self, name: str, line: int, scope: _Scope | None = None) -> None:
        target = scope or self.scope
        target.bound.add(name)
        target.first_binding.setdefault(name, line)
        self.anywhere.add(name)

    def _push(self, kind: str) -> _Scope:
        self.scope = _Scope(kind, self.scope)
        return self.scope

    def _pop(self, scope: _Scope) -> None:
        assert scope.parent is not None
        self.scope = scope.parent

    @property
    def module_bound(self) -> set[str]:
        return self.module.bound

    # ---- visitors

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            load = _Load(node.id, node.lineno, node.col_offset + 1, self.scope, self._guards > 0)
            self.loads.append(load)
        else:  # Store, Del
            self._bind(node.id, node.lineno)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bind(alias.asname or alias.name.split(".", 1)[0], node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self._bind(alias.asname or alias.name, node.lineno)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.scope.globals_.add(name)
            self._bind(name, node.lineno, self.module)
            self.anywhere.add(name)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self._bind(name, node.lineno)  # resolved in an enclosing function: not global

    def _guarded(self, body: list[ast.stmt]) -> None:
        self._guards += 1
        for statement in body:
            self.visit(statement)
        self._guards -= 1

    def visit_Try(self, node: ast.Try) -> None:
        self._try(node)

    def visit_TryStar(self, node: ast.AST) -> None:  # Python 3.11+: ``except*``
        self._try(node)

    def _try(self, node: ast.AST) -> None:
        handlers: list[ast.ExceptHandler] = getattr(node, "handlers", [])
        if any(_catches_name_error(handler) for handler in handlers):
            self._guarded(getattr(node, "body", []))
            for field in ("handlers", "orelse", "finalbody"):
                for child in getattr(node, field, []):
                    self.visit(child)
        else:
            self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if _is_version_test(node.test):
            self._guarded(node.body)
            self._guarded(node.orelse)
        else:
            for statement in [*node.body, *node.orelse]:
                self.visit(statement)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, node.lineno)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name, node.lineno)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, node.lineno)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node.rest, node.lineno)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        self._bind(node.target.id, node.lineno, scope)

    def _type_param_scope(self, node: ast.AST) -> _Scope | None:
        """A scope for PEP 695 type parameters (Python 3.12+), if ``node`` has any."""
        params = getattr(node, "type_params", None) or []
        if not params:
            return None
        scope = self._push("function")
        for param in params:
            name = getattr(param, "name", None)
            if isinstance(name, str) and type(param).__name__ in _TYPE_PARAM_CLASSES:
                self._bind(name, getattr(param, "lineno", 1))
        for param in params:  # bounds and defaults see the parameters
            for field in ("bound", "default_value"):
                value = getattr(param, field, None)
                if isinstance(value, ast.AST):
                    self.visit(value)
        return scope

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)
        outer = self.scope
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            self._bind(node.name, node.lineno, outer)
        type_scope = self._type_param_scope(node)
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            all_args.append(args.vararg)
        if args.kwarg:
            all_args.append(args.kwarg)
        if not isinstance(node, ast.Lambda):
            for arg in all_args:
                if arg.annotation is not None:
                    self.visit(arg.annotation)
            if node.returns is not None:
                self.visit(node.returns)
        scope = self._push("function")
        for arg in all_args:
            self._bind(arg.arg, getattr(arg, "lineno", node.lineno))
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            for statement in node.body:
                self.visit(statement)
        self._pop(scope)
        if type_scope is not None:
            self._pop(type_scope)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._bind(node.name, node.lineno)
        type_scope = self._type_param_scope(node)
        for base in node.bases:
            self.visit(base)
        for keyword in node.keywords:
            self.visit(keyword.value)
        scope = self._push("class")
        for statement in node.body:
            self.visit(statement)
        self._pop(scope)
        if type_scope is not None:
            self._pop(type_scope)

    def visit_TypeAlias(self, node: ast.AST) -> None:  # Python 3.12+: ``type X[T] = ...``
        name = getattr(node, "name", None)
        if isinstance(name, ast.Name):
            self._bind(name.id, name.lineno)
        type_scope = self._type_param_scope(node)
        value = getattr(node, "value", None)
        if isinstance(value, ast.AST):
            self.visit(value)
        if type_scope is not None:
            self._pop(type_scope)

    def visit(self, node: ast.AST) -> None:
        """Dispatch as NodeVisitor does, with the method lookup cached per node class."""
        cls = type(node)
        method = self._methods.get(cls)
        if method is None:
            found: Callable[[PythonNames, Any], None] = PythonNames._leaf
            if not issubclass(cls, _LEAVES):
                found = getattr(type(self), "visit_" + cls.__name__, PythonNames.generic_visit)
            self._methods[cls] = method = found
        method(self, node)

    def _leaf(self, node: ast.AST) -> None:
        """Nodes that hold no names: constants, contexts, operators."""

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = self._push("comprehension")
        for i, generator in enumerate(generators):
            if i:
                self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self._pop(scope)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node)

    # ---- resolution

    def resolves_to_module(self, load: _Load) -> bool:
        """Whether a read finds no binding in its own or an enclosing function scope.

        Class scopes are seen only by code directly in the class body, as in Python.
        """
        scope: _Scope | None = load.scope
        own = True
        while scope is not None and scope.kind != "module":
            if load.name in scope.globals_:
                return True
            if load.name in scope.bound and (own or scope.kind != "class"):
                return False
            own = False
            scope = scope.parent
        return True

    def module_reads(self) -> Iterator[_Load]:
        """Reads that resolve to a name the module itself does not bind (unguarded)."""
        for load in self.loads:
            if load.guarded or load.name in PYTHON_IMPLICIT or load.name in self.module.bound:
                continue
            if self.resolves_to_module(load):
                yield load

    def undefined_reads(self) -> Iterator[_Load]:
        """Reads of names bound nowhere in the file (not even in another scope)."""
        for load in self.loads:
            if load.guarded or load.name in PYTHON_IMPLICIT or load.name in self.anywhere:
                continue
            yield load


_VERSION_NAME = re.compile(r"^(version_info|hexversion|version|(IS_)?PY(THON)?_?\d+\w*)$", re.I)


def _catches_name_error(handler: ast.ExceptHandler) -> bool:
    """A bare ``except:``, or one that names NameError (``except Exception`` is too common
    around ordinary code to excuse what it wraps)."""
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in kinds:
        name = kind.id if isinstance(kind, ast.Name) else getattr(kind, "attr", "")
        if name == "NameError":
            return True
    return False


def _is_version_test(test: ast.expr) -> bool:
    """``if sys.version_info >= (3, 15):``, ``if PY2:``, ``if six.PY3:`` ..."""
    for node in ast.walk(test):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(name, str) and _VERSION_NAME.search(name):
            return True
    return False


# Comments that silence an undefined-name report on their line: bare, or naming that check.
_SUPPRESSED = re.compile(
    rb"#\s*(noqa\b(?!:)|noqa:[^#]*F821"
    rb"|type:\s*ignore(?!\[)|type:\s*ignore\[[^\]]*name-defined"
    rb"|pyright:\s*ignore(?!\[)|pyright:\s*ignore\[[^\]]*reportUndefinedVariable)"
)


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


def parse_python(data: bytes) -> ast.Module | None:
    """The module's AST, or None if this interpreter cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _grouped(
    loads: list[_Load], message: str, extra: dict[str, str] | None = None
) -> list[ScopeProblem]:
    by_name: dict[str, list[_Load]] = {}
    for load in sorted(loads, key=lambda x: (x.line, x.column)):
        by_name.setdefault(load.name, []).append(load)
    problems = []
    for name, uses in by_name.items():
        first = uses[0]
        text = message.format(name=name) + (extra or {}).get(name, "")
        text += _also_used(first.line, [use.line for use in uses])
        problems.append(ScopeProblem(first.line, first.column, text))
    return problems


def _also_used(first: int, lines: list[int]) -> str:
    others = sorted(set(lines) - {first})
    if not others:
        return ""
    shown = ", ".join(str(n) for n in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return f" (also used at line{'s' if len(others) > 1 else ''} {shown}{more})"


def python_scope_problems(
    load_before: Callable[[], bytes | None],
    after_tree: ast.Module,
    after_lines: Sequence[bytes],
) -> tuple[list[ScopeProblem], list[str]]:
    """Scope problems the change introduced in a Python file, and notes about the check.

    ``load_before`` returns the T0 content (None for a new file); it is called only when the
    file after the change reads a name it does not bind, which valid changes rarely do.
    """
    names = PythonNames.of(after_tree)
    suppressed = {
        n for n, line in enumerate(after_lines, 1) if b"#" in line and _SUPPRESSED.search(line)
    }
    dangling = [load for load in names.module_reads() if load.line not in suppressed]
    if not dangling:
        return [], []
    dynamic = dynamic_globals(after_tree)
    if dynamic:
        return [], [f"scope not checked: the file {dynamic}"]

    before = load_before()
    before_names: PythonNames | None = None
    before_tree = parse_python(before) if before is not None else None
    if before_tree is not None:
        before_names = PythonNames.of(before_tree)
    notes: list[str] = []
    if before is not None and before_tree is None:
        notes.append("removed definitions not checked: the file did not parse at T0")

    problems: list[ScopeProblem] = []
    reported: set[str] = set()
    # (a) module-level definitions the change removed or renamed, still read
    if before_names is not None:
        gone = [load for load in dangling if load.name in before_names.module_bound]
        if gone:
            first_binding = before_names.module.first_binding
            origin = {
                load.name: f" (defined at line {first_binding[load.name]} before)" for load in gone
            }
            problems += _grouped(
                gone,
                "'{name}' is still used here, but the change removed or renamed "
                "its module-level definition",
                origin,
            )
            reported = {load.name for load in gone}

    # (b) names newly read on changed lines that are bound nowhere in the file
    before_lines = split_lines(before) if before is not None else None
    changed = LineDiff.of(before_lines, after_lines).changed
    new_uses = [
        load
        for load in names.undefined_reads()
        if load.line in changed and load.line not in suppressed and load.name not in reported
    ]
    if new_uses and before is not None:
        if before_names is None:  # unparseable at T0: a name already in the old text is old
            text = before.decode("utf-8", "replace")
            known_bad = {
                load.name
                for load in new_uses
                if re.search(rf"(?<![\w.]){re.escape(load.name)}(?!\w)", text)
            }
        elif before_tree is not None and dynamic_globals(before_tree):  # T0 unknowable
            known_bad = {load.name for load in new_uses}
        else:
            known_bad = {load.name for load in before_names.undefined_reads()}
        new_uses = [load for load in new_uses if load.name not in known_bad]
    problems += _grouped(
        new_uses,
        "'{name}' is not defined: not a builtin, not imported, and not assigned "
        "anywhere in this file",
    )
    return sorted(problems), notes


# --------------------------------------------------------------------------------------------
# JavaScript / TypeScript: (a) only, top-level declarations

# Well-known globals: a top-level declaration shadowing one of these may be removed safely.
_JS_GLOBAL_NAMES = """
    globalThis window self document navigator location history console fetch
    setTimeout clearTimeout setInterval clearInterval setImmediate clearImmediate
    queueMicrotask structuredClone requestAnimationFrame cancelAnimationFrame alert
    confirm prompt localStorage sessionStorage performance crypto atob btoa event name
    status open close print length parent top frames opener origin screen
    Object Function Array Number parseFloat parseInt Infinity NaN undefined Boolean String
    Symbol Date Promise RegExp Error AggregateError EvalError RangeError ReferenceError
    SyntaxError TypeError URIError JSON Math Intl ArrayBuffer SharedArrayBuffer Atomics
    Uint8Array Int8Array Uint16Array Int16Array Uint32Array Int32Array Float32Array
    Float64Array Uint8ClampedArray BigUint64Array BigInt64Array BigInt DataView Map Set
    WeakMap WeakSet WeakRef FinalizationRegistry Proxy Reflect decodeURI decodeURIComponent
    encodeURI encodeURIComponent escape unescape eval isFinite isNaN Iterator
    URL URLSearchParams TextEncoder TextDecoder AbortController AbortSignal Blob File
    FormData Headers Request Response Event EventTarget CustomEvent WebSocket Worker
    XMLHttpRequest HTMLElement Element Node MutationObserver IntersectionObserver
    ResizeObserver Image Audio ReadableStream WritableStream TransformStream
    process require module exports __dirname __filename Buffer global Deno Bun
    describe it test expect beforeEach afterEach beforeAll afterAll jest vi
    $ jQuery React chrome browser
"""
JS_GLOBALS: frozenset[str] = frozenset(_JS_GLOBAL_NAMES.split())

_JS_IDENTIFIERS = frozenset(
    {
        "identifier",
        "shorthand_property_identifier",
        "shorthand_property_identifier_pattern",
        "type_identifier",
    }
)

# Parents in which an ``identifier`` child is always a plain read of a variable.
_JS_READ_PARENTS = frozenset(
    {
        "arguments",
        "array",
        "binary_expression",
        "return_statement",
        "expression_statement",
        "template_substitution",
        "parenthesized_expression",
        "spread_element",
        "await_expression",
        "ternary_expression",
        "sequence_expression",
        "jsx_expression",
        "class_heritage",
        "extends_clause",
        "subscript_expression",
        "non_null_expression",
        "as_expression",
        "satisfies_expression",
        "yield_expression",
        "throw_statement",
        "decorator",
    }
)

# (parent, field) pairs in which an ``identifier`` is a plain read.
_JS_READ_FIELDS = frozenset(
    {
        ("call_expression", "function"),
        ("new_expression", "constructor"),
        ("member_expression", "object"),
        ("variable_declarator", "value"),
        ("assignment_expression", "right"),
        ("augmented_assignment_expression", "right"),
        ("pair", "value"),
        ("arrow_function", "body"),
        ("for_in_statement", "right"),
        ("export_statement", "value"),
        ("switch_statement", "value"),
        ("switch_case", "value"),
    }
)

_JS_TYPE_DECLARATIONS = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "type_alias_declaration",
        "type_parameter",
        "enum_declaration",
    }
)

_JSX_NAMES = frozenset({"jsx_opening_element", "jsx_closing_element", "jsx_self_closing_element"})


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _pattern_names(node: Node) -> Iterator[Node]:
    """The identifiers a declaration name or destructuring pattern binds."""
    if node.type in ("identifier", "shorthand_property_identifier_pattern", "type_identifier"):
        yield node
        return
    for i, child in enumerate(node.children):
        field = node.field_name_for_child(i)
        if node.type == "pair_pattern" and field == "key":
            continue
        if node.type in ("assignment_pattern", "object_assignment_pattern") and field == "right":
            continue
        yield from _pattern_names(child)


def js_top_level(tree: Tree) -> dict[str, int]:
    """Names declared at the top level of a JS/TS module, with their 1-based line."""
    found: dict[str, int] = {}

    def add(node: Node | None) -> None:
        if node is not None:
            found.setdefault(_text(node), node.start_point.row + 1)

    def declaration(node: Node) -> None:
        kind = node.type
        if kind in ("export_statement", "ambient_declaration"):
            for child in node.named_children:
                declaration(child)
        elif kind == "expression_statement":
            for child in node.named_children:
                if child.type in ("internal_module", "module"):
                    add(child.child_by_field_name("name"))
        elif kind in (
            "function_declaration",
            "generator_function_declaration",
            "class_declaration",
            "abstract_class_declaration",
            "enum_declaration",
            "internal_module",
            "module",
            "function_signature",
        ):
            name = node.child_by_field_name("name")
            if name is not None and name.type in ("identifier", "type_identifier"):
                add(name)
        elif kind in ("lexical_declaration", "variable_declaration"):
            for child in node.named_children:
                if child.type == "variable_declarator":
                    name = child.child_by_field_name("name")
                    if name is not None:
                        for ident in _pattern_names(name):
                            add(ident)
        elif kind == "import_statement":
            for child in _walk(node):
                if child.type in ("import_clause", "namespace_import", "import_require_clause"):
                    for ident in child.children:
                        if ident.type == "identifier":
                            add(ident)
                elif child.type == "import_specifier":
                    add(child.child_by_field_name("alias") or child.child_by_field_name("name"))

    for statement in tree.root_node.named_children:
        declaration(statement)
    return found


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _js_is_read(node: Node) -> bool | None:
    """True for a plain read of a variable, False for anything that may bind or shadow it,
    None for an occurrence that is neither (a type reference, an HTML tag name)."""
    parent = node.parent
    if parent is None:
        return False
    if node.type == "type_identifier":
        is_declared_name = (
            parent.type in _JS_TYPE_DECLARATIONS
            and parent.child_by_field_name("name") is not None
            and parent.child_by_field_name("name") == node
        )
        return False if is_declared_name else None
    if node.type == "shorthand_property_identifier":
        return parent.type == "object"
    if node.type != "identifier":
        return False
    if parent.type in _JSX_NAMES:
        return True if _text(node)[:1].isupper() else None
    if parent.type == "unary_expression":
        operator = parent.child_by_field_name("operator")
        return operator is None or operator.type != "typeof"
    if parent.type == "export_specifier":
        statement = parent.parent.parent if parent.parent is not None else None
        if statement is None or statement.child_by_field_name("source") is not None:
            return False  # ``export { x } from "y"`` names y's export, not a local
        return True if parent.child_by_field_name("name") == node else None
    if parent.type in _JS_READ_PARENTS:
        return True
    for i, child in enumerate(parent.children):
        if child == node:
            return (parent.type, parent.field_name_for_child(i)) in _JS_READ_FIELDS
    return False


def is_module_path(path: str) -> bool:
    """Whether the file name alone says the file is a module (``.mjs .cjs .mts .cts``)."""
    return path.lower().endswith((".mjs", ".cjs", ".mts", ".cts"))


def js_scope_problems(
    load_before: Callable[[], Tree | None], after_tree: Tree, module: bool = False
) -> list[ScopeProblem]:
    """Top-level declarations the change removed while the file still reads them.

    Only for modules: ``module`` (from the file name), an ``import``/``export`` statement at
    the top level, or CommonJS (``require(...)``, ``module.exports``, ``exports.x``). A
    script's top-level declarations are globals that another script may provide.

    ``load_before`` returns the T0 tree (None for a new file or one that did not parse); it
    is called only when the file after the change reads a name it never declares.
    """
    module = module or any(
        child.type in ("import_statement", "export_statement")
        for child in after_tree.root_node.children
    )
    reads: dict[str, list[Node]] = {}
    shadowed: set[str] = set()
    for node in _walk(after_tree.root_node):
        if node.type not in _JS_IDENTIFIERS:
            continue
        name = _text(node)
        if not module and name in ("require", "module", "exports"):
            parent = node.parent
            module = parent is not None and (
                (parent.type == "call_expression" and name == "require")
                or (parent.type == "member_expression" and name != "require")
            )
        if name in shadowed or name in JS_GLOBALS:
            continue
        verdict = _js_is_read(node)
        if verdict is True:
            reads.setdefault(name, []).append(node)
        elif verdict is False:
            shadowed.add(name)
    undeclared = {name: nodes for name, nodes in reads.items() if name not in shadowed}
    if not module or not undeclared:
        return []
    before_tree = load_before()
    if before_tree is None:
        return []
    declared_before = js_top_level(before_tree)
    problems = []
    for name, nodes in undeclared.items():
        if name not in declared_before:
            continue
        first = min(nodes, key=lambda n: (n.start_point.row, n.start_point.column))
        text = (
            f"'{name}' is still used here, but the change removed or renamed its top-level "
            f"declaration (declared at line {declared_before[name]} before)"
        ) + _also_used(first.start_point.row + 1, [n.start_point.row + 1 for n in nodes])
        problems.append(ScopeProblem(first.start_point.row + 1, first.start_point.column + 1, text))
    return sorted(problems)


# --------------------------------------------------------------------------------------------
# Entry point for tests and tools


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
