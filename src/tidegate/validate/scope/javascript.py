"""Scope check of a changed JavaScript/TypeScript module: removed top-level declarations
still read (check (a) only)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tree_sitter import Node, Tree

from tidegate.validate.scope.problem import ScopeProblem, also_used

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
        ) + also_used(first.start_point.row + 1, [n.start_point.row + 1 for n in nodes])
        problems.append(ScopeProblem(first.start_point.row + 1, first.start_point.column + 1, text))
    return sorted(problems)
