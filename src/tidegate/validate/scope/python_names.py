"""Python's scopes in a small model: every binding and every bare-name read of a module."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import msgspec

from tidegate.validate.scope.python_implicit import PYTHON_IMPLICIT

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


class Load(msgspec.Struct, frozen=True):
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
        self.loads: list[Load] = []
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
            load = Load(node.id, node.lineno, node.col_offset + 1, self.scope, self._guards > 0)
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

    def resolves_to_module(self, load: Load) -> bool:
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

    def module_reads(self) -> Iterator[Load]:
        """Reads that resolve to a name the module itself does not bind (unguarded)."""
        for load in self.loads:
            if load.guarded or load.name in PYTHON_IMPLICIT or load.name in self.module.bound:
                continue
            if self.resolves_to_module(load):
                yield load

    def undefined_reads(self) -> Iterator[Load]:
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
