"""Which language a changed file is in, and a tree-sitter parser for it.

Grammars come from the official per-language wheels (``tree-sitter-python`` ...), which ship
the compiled grammar, so nothing is downloaded. Each grammar is loaded once per process, on
first use; parsers are kept per thread (a ``tree_sitter.Parser`` is not safe to share between
threads that parse at the same time).
"""

from __future__ import annotations

import importlib
import re
import threading
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded with the first grammar: a Python-only change never needs it
    from tree_sitter import Language, Parser

PYTHON = "python"
JAVASCRIPT = "javascript"
TYPESCRIPT = "typescript"
TSX = "tsx"
RUST = "rust"
GO = "go"
JSON = "json"
JSONC = "jsonc"  # JSON with comments and trailing commas (tsconfig.json, .vscode/*.json ...)
YAML = "yaml"
TOML = "toml"

EXTENSIONS: dict[str, str] = {
    ".py": PYTHON,
    ".pyi": PYTHON,
    ".js": JAVASCRIPT,
    ".mjs": JAVASCRIPT,
    ".cjs": JAVASCRIPT,
    ".jsx": JAVASCRIPT,
    ".ts": TYPESCRIPT,
    ".mts": TYPESCRIPT,
    ".cts": TYPESCRIPT,
    ".tsx": TSX,
    ".rs": RUST,
    ".go": GO,
    ".json": JSON,
    ".yaml": YAML,
    ".yml": YAML,
    ".toml": TOML,
}

# language -> (module of the grammar wheel, function returning the TSLanguage pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    PYTHON: ("tree_sitter_python", "language"),
    JAVASCRIPT: ("tree_sitter_javascript", "language"),
    TYPESCRIPT: ("tree_sitter_typescript", "language_typescript"),
    TSX: ("tree_sitter_typescript", "language_tsx"),
    RUST: ("tree_sitter_rust", "language"),
    GO: ("tree_sitter_go", "language"),
    JSON: ("tree_sitter_json", "language"),
    JSONC: ("tree_sitter_json", "language"),
    YAML: ("tree_sitter_yaml", "language"),
    TOML: ("tree_sitter_toml", "language"),
}

LANGUAGES: tuple[str, ...] = tuple(GRAMMARS)


# JSON files that the tools reading them parse as JSONC (comments, trailing commas).
_JSONC_NAMES = re.compile(
    r"(^|/)(\.vscode/[^/]+|(ts|js)config(\.[^/]*)?\.json|\.?devcontainer\.json"
    r"|\.eslintrc\.json|tslint\.json|\.babelrc\.json|api-extractor\.json)$",
    re.IGNORECASE,
)


def detect_language(path: str) -> str | None:
    """The language of a repository path, from its file name alone (case-insensitive suffix)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot < 0:
        return None
    language = EXTENSIONS.get(name[dot:].lower())
    if language == JSON and _JSONC_NAMES.search(path):
        return JSONC
    return language


@cache
def grammar(language: str) -> Language:
    """The tree-sitter grammar of ``language``, loaded from its wheel on first use."""
    from tree_sitter import Language

    try:
        module_name, function = GRAMMARS[language]
    except KeyError:
        raise ValueError(f"no tree-sitter grammar for {language!r}") from None
    module = importlib.import_module(module_name)
    return Language(getattr(module, function)())


_local = threading.local()


def parser_for(language: str) -> Parser:
    """This thread's parser for ``language`` (created once per thread and language)."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    parser = parsers.get(language)
    if parser is None:
        from tree_sitter import Parser

        parser = Parser(grammar(language))
        parsers[language] = parser
    return parser
