"""AST_VALIDATE's syntax check: language detection, tree-sitter and ast errors, and only the
errors a change introduced count against it."""

from __future__ import annotations

import statistics
import sys
import threading
import time

import pytest

from tests.conftest import Repo
from tidegate.git.command import Git
from tidegate.validate.languages import LANGUAGES, detect_language, grammar, parser_for
from tidegate.validate.syntax import MAX_ERRORS_PER_FILE, check_change, check_file
from tidegate.validate.syntax.parse import syntax_errors
from tidegate.workspace.changes import diff_trees

# --------------------------------------------------------------------------------------------
# Language detection and grammar loading


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.py", "python"),
        ("pkg/stubs/a.pyi", "python"),
        ("a.js", "javascript"),
        ("a.mjs", "javascript"),
        ("a.cjs", "javascript"),
        ("src/App.jsx", "javascript"),
        ("a.ts", "typescript"),
        ("types/index.d.ts", "typescript"),
        ("a.mts", "typescript"),
        ("a.cts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("src/main.rs", "rust"),
        ("cmd/main.go", "go"),
        ("package.json", "json"),
        ("tsconfig.json", "jsonc"),
        ("packages/web/tsconfig.build.json", "jsonc"),
        (".vscode/settings.json", "jsonc"),
        (".github/workflows/ci.yml", "yaml"),
        ("config.yaml", "yaml"),
        ("pyproject.toml", "toml"),
        ("UPPER.PY", "python"),
        ("README.md", None),
        ("Makefile", None),
        ("a.py.orig", None),
        ("dir.py/file", None),
    ],
)
def test_detect_language(path: str, language: str | None) -> None:
    assert detect_language(path) == language


def test_grammars_load_once_and_parsers_are_per_thread() -> None:
    for language in LANGUAGES:
        assert grammar(language) is grammar(language)
        assert parser_for(language) is parser_for(language)
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(parser_for("python")))
    thread.start()
    thread.join()
    assert other[0] is not parser_for("python")
    with pytest.raises(ValueError, match="no tree-sitter grammar"):
        grammar("cobol")


# --------------------------------------------------------------------------------------------
# One valid sample per language, a way to break it (old line, new line, expected error line)
# and an unrelated valid edit (old line, new line).

SAMPLES: dict[str, tuple[str, str, tuple[str, str, int], tuple[str, str]]] = {
    "python": (
        "calc.py",
        """import os


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5


print(add(1, 2), os.sep)
""",
        ("    return a * b", "    return a * (b", 9),
        ("    return a + b", "    return b + a"),
    ),
    "javascript": (
        "calc.js",
        """import { join } from "path";

export function add(a, b) {
  return a + b;
}

export function mul(a, b) {
  return a * b;
}

export class Point {
  constructor(x, y) {
    this.x = x;
    this.y = y;
  }

  norm() {
    return Math.sqrt(this.x ** 2 + this.y ** 2);
  }
}

console.log(add(1, 2), join("a", "b"));
""",
        ("  return a * b;", "  return a * ;", 8),
        ("  return a + b;", "  return b + a;"),
    ),
    "typescript": (
        "calc.ts",
        """import { join } from "path";

export function add(a: number, b: number): number {
  return a + b;
}

export function mul(a: number, b: number): number {
  return a * b;
}

export interface Shape {
  area(): number;
}

export class Square implements Shape {
  constructor(private readonly side: number) {}

  area(): number {
    return this.side ** 2;
  }
}

console.log(add(1, 2), join("a", "b"));
""",
        ("  return a * b;", "  return a * ;", 8),
        ("  return a + b;", "  return b + a;"),
    ),
    "tsx": (
        "Greeting.tsx",
        """import React from "react";

type Props = { name: string; count: number };

export function Greeting({ name, count }: Props) {
  const label = `${name}: ${count}`;
  return (
    <div className="greeting">
      <span>{label}</span>
    </div>
  );
}

export function total(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
""",
        ("      <span>{label}</span>", "      <span>{label}</span", 9),
        (
            "  return values.reduce((a, b) => a + b, 0);",
            "  return values.reduce((x, y) => x + y, 0);",
        ),
    ),
    "rust": (
        "src/calc.rs",
        """use std::fmt;

pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

pub fn mul(a: i32, b: i32) -> i32 {
    a * b
}

pub struct Point {
    x: f64,
    y: f64,
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}
""",
        ("    a * b", "    a * ", 8),
        ("    a + b", "    b + a"),
    ),
    "go": (
        "calc/calc.go",
        """package calc

import "fmt"

func Add(a, b int) int {
\treturn a + b
}

func Mul(a, b int) int {
\treturn a * b
}

type Point struct {
\tX, Y float64
}

func (p Point) String() string {
\treturn fmt.Sprintf("(%v, %v)", p.X, p.Y)
}
""",
        ("\treturn a * b", "\treturn a * )", 10),
        ("\treturn a + b", "\treturn b + a"),
    ),
    "json": (
        "package.json",
        """{
  "name": "demo",
  "version": "1.0.0",
  "scripts": {
    "test": "jest",
    "build": "tsc"
  },
  "dependencies": {
    "left-pad": "^1.3.0"
  },
  "private": true
}
""",
        ('    "build": "tsc"', '    "build" "tsc"', 6),
        ('  "version": "1.0.0",', '  "version": "1.0.1",'),
    ),
    "yaml": (
        ".github/workflows/ci.yml",
        """name: demo
on:
  push:
    branches: [main]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: make test
      - run: make lint
""",
        ("      - run: make test", "      - run: [make test", 10),
        ("    runs-on: ubuntu-latest", "    runs-on: ubuntu-22.04"),
    ),
    "toml": (
        "pyproject.toml",
        """[project]
name = "demo"
version = "1.0.0"
dependencies = [
  "requests>=2",
]

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
addopts = "-ra"
""",
        ("line-length = 100", "line-length = ", 9),
        ('version = "1.0.0"', 'version = "1.0.1"'),
    ),
}


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def lines_of(problems: list[str]) -> list[int]:
    return [int(p.split(":")[1]) for p in problems]


def test_every_language_has_a_sample() -> None:
    assert set(SAMPLES) == set(LANGUAGES) - {"jsonc"}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_valid_file_passes(language: str) -> None:
    path, source, _break, (old, new) = SAMPLES[language]
    assert detect_language(path) == language
    assert syntax_errors(language, source.encode()) == []
    created = check_file(path, None, source.encode())
    assert created.parsed and created.problems == [] and created.notes == []
    edited = check_file(path, source.encode(), replace_once(source, old, new).encode())
    assert edited.parsed and edited.problems == [] and edited.notes == []


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_introduced_error_fails_at_its_line(language: str) -> None:
    path, source, (old, new, line), _edit = SAMPLES[language]
    broken = replace_once(source, old, new)
    report = check_file(path, source.encode(), broken.encode())
    assert report.problems, language
    assert lines_of(report.problems)[0] == line
    assert report.problems[0].startswith(f"{path}:{line}:")
    assert "syntax error" in report.problems[0]
    assert new.strip() in report.problems[0]  # the offending source line is quoted
    # a new file with the error fails too
    assert lines_of(check_file(path, None, broken.encode()).problems)[0] == line


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_file_broken_at_t0_with_an_unrelated_change_passes(language: str) -> None:
    path, source, (old, new, _line), (edit_old, edit_new) = SAMPLES[language]
    broken = replace_once(source, old, new)
    assert syntax_errors(language, broken.encode())  # really broken at T0
    edited = replace_once(broken, edit_old, edit_new)
    report = check_file(path, broken.encode(), edited.encode())
    assert report.parsed
    assert report.problems == []
    # ... and lines added above the old error, which moves it, change nothing either
    comment = "# a comment" if language in ("python", "yaml", "toml") else "// a comment"
    shifted = comment + "\n\n" + edited
    assert check_file(path, broken.encode(), shifted.encode()).problems == []


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_new_error_next_to_an_old_one_is_reported(language: str) -> None:
    path, source, (old, new, line), (edit_old, _edit_new) = SAMPLES[language]
    broken = replace_once(source, old, new)
    edit_line = source.splitlines().index(edit_old) + 1
    # the unrelated edit, made broken: an unclosed bracket where the edit was
    unclosed = edit_old.rstrip(",;") + " [("
    if language == "yaml":  # a plain scalar takes almost anything: open a flow sequence
        unclosed = edit_old.replace(": ", ": [")
    worse = replace_once(broken, edit_old, unclosed)
    report = check_file(path, broken.encode(), worse.encode())
    assert report.problems, language
    assert line not in lines_of(report.problems)  # the old error is still not blamed
    if language != "python":  # ast reports where it gives up: the next "def" (line 8)
        assert lines_of(report.problems)[0] == edit_line, report.problems


def test_unknown_language_passes_with_a_note() -> None:
    report = check_file("notes/README.md", None, b"# title\n\n```py\ndef (:\n```\n")
    assert not report.parsed
    assert report.problems == []
    assert report.notes == ["notes/README.md: not parsed: unknown language"]


@pytest.mark.parametrize(
    ("path", "data", "why"),
    [
        ("data.json", b'{"a": "\x00\x01"}', "binary"),
        ("icon.py", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("legacy.py", "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1"), "UTF-8"),
        ("utf16.json", '{"a": 1}'.encode("utf-16"), "binary"),
    ],
)
def test_binary_or_non_utf8_content_is_a_note(path: str, data: bytes, why: str) -> None:
    report = check_file(path, None, data)
    assert report.problems == []
    assert len(report.notes) == 1
    assert report.notes[0].startswith(f"{path}: not parsed: binary or not UTF-8")


# --------------------------------------------------------------------------------------------
# How old and new errors are told apart


def test_deleting_a_closing_bracket_blames_the_change_at_an_unchanged_line() -> None:
    before = b'{\n  "a": [\n    1,\n    2\n  ],\n  "b": 3\n}\n'
    after = b'{\n  "a": [\n    1,\n    2\n  "b": 3\n}\n'
    report = check_file("x.json", before, after)
    assert report.problems
    assert all(p.startswith("x.json:") for p in report.problems)


def test_an_old_error_repeated_on_a_new_line_is_reported() -> None:
    line = "    return a * (b\n"
    before = "def f(a, b):\n" + line
    after = "def g(a, b):\n" + line + "\n\ndef f(a, b):\n" + line
    # Python: the unclosed bracket now swallows the next "def", where ast gives up
    assert lines_of(check_file("m.py", before.encode(), after.encode()).problems) == [5]
    appended = before + "\n\ndef g(a, b):\n" + line
    assert lines_of(check_file("m.py", before.encode(), appended.encode()).problems) == [5]
    go_before = "package a\n\nfunc f() {\n\tx := )\n}\n"
    go_after = "package a\n\nfunc f() {\n\tx := )\n}\n\nfunc g() {\n\tx := )\n}\n"
    go = check_file("a.go", go_before.encode(), go_after.encode())
    assert lines_of(go.problems) == [8]


def test_reindenting_a_broken_line_is_not_a_new_error() -> None:
    before = b"a: 1\nb: [1, 2\nc: 3\n"
    after = b"a: 1\nb:   [1, 2\nc: 4\n"
    assert syntax_errors("yaml", before)
    report = check_file("x.yaml", before, after)
    assert all(":2:" not in p for p in report.problems)


def test_python_errors_that_only_ast_sees_are_rejected() -> None:
    cases = {
        "f(a=1, b)\n": "positional argument follows keyword argument",
        'print "hello"\n': "Missing parentheses",
        "def f():\n    pass\nreturn 3\n": "'return' outside function",
        "def f(a, a):\n    pass\n": "duplicate argument",
        "def f():\n    nonlocal y\n": "no binding for nonlocal 'y' found",
        "for x in y:\n    pass\nbreak\n": "'break' outside loop",
    }
    for source, message in cases.items():
        report = check_file("m.py", b"x = 1\n", source.encode())
        assert len(report.problems) == 1, source
        assert message in report.problems[0], report.problems


def test_python_warnings_are_not_errors() -> None:
    source = b'import re\npattern = re.compile("\\d+")\nassert (1, "always true")\n'
    assert syntax_errors("python", source) == []


def test_python_syntax_newer_than_the_interpreter_is_a_note() -> None:
    source = b"def first[T](items: list[T]) -> T:\n    return items[0]\n\n\ntype Pair = tuple[int, int]\n"
    report = check_file("m.py", None, source)
    assert report.problems == []
    if sys.version_info < (3, 12):
        assert len(report.notes) == 1
        assert "m.py:1:" in report.notes[0]
        assert "type parameters (PEP 695/696)" in report.notes[0]
    else:
        assert report.notes == []


def test_python_error_masked_by_an_old_one_is_found_by_tree_sitter() -> None:
    path, source, (old, new, _line), _edit = SAMPLES["python"]
    broken = replace_once(source, old, new)
    worse = replace_once(
        broken,
        "        return (self.x**2 + self.y**2) ** 0.5",
        "        return (self.x**2 + self.y**2) **",
    )
    report = check_file(path, broken.encode(), worse.encode())
    assert lines_of(report.problems) == [18]


def test_python_bom_and_crlf() -> None:
    source = "\ufeffimport os\r\n\r\nprint(os.sep)\r\n".encode()
    assert check_file("m.py", None, source).problems == []
    broken = "\ufeffimport os\r\n\r\nprint(os.sep\r\n".encode()
    assert lines_of(check_file("m.py", source, broken).problems) == [3]
    assert syntax_errors("json", '\ufeff{"a": 1}\n'.encode()) == []


def test_jsonc_allows_comments_and_trailing_commas() -> None:
    source = b'{\n  // options\n  "compilerOptions": {\n    "strict": true, /* yes */\n  },\n}\n'
    assert check_file("tsconfig.json", None, source).problems == []
    strict = check_file("config.json", None, source)
    assert strict.problems  # plain JSON: trailing commas are errors
    broken = source.replace(b'"strict": true', b'"strict" true')
    assert lines_of(check_file("tsconfig.json", source, broken).problems) == [4]


def test_json_and_toml_are_judged_by_pythons_own_parsers() -> None:
    # tree-sitter-json rejects the valid exponent "1e+5"; json does not
    assert check_file("data.json", None, b'{"big": 1e+5, "small": 2.5E-3}\n').problems == []
    # comments are tolerated in any .json file (tree-sitter-json accepts them too)
    assert check_file("data.json", None, b'{\n  // why\n  "a": "http://x"\n}\n').problems == []
    missing_comma = check_file("data.json", b'{"a": 1,\n "b": 2}\n', b'{"a": 1\n "b": 2}\n')
    assert missing_comma.problems == [
        "data.json:2:2: syntax error, Expecting ',' delimiter: \"b\": 2}"
    ]
    # tomllib catches what tree-sitter-toml accepts: a key defined twice
    duplicate = check_file("pyproject.toml", b"a = 1\n", b"a = 1\na = 2\n")
    assert duplicate.problems == [
        "pyproject.toml:2:6: syntax error, Cannot overwrite a value: a = 2"
    ]


def test_typescript_declaration_file_errors_are_notes() -> None:
    source = b'declare module "x" {\n  global {\n    var flag: boolean;\n  }\n}\n'
    report = check_file("types/x.d.ts", None, source + b"export = function f(): void;\n")
    assert report.problems == []
    assert report.notes and "declaration-file syntax" in report.notes[0]


def test_python_fstring_newer_syntax_is_a_note_but_real_errors_are_not() -> None:
    nested = b'data = {"k": 1}\nprint(f"{data["k"]}")\n'  # valid from Python 3.12
    report = check_file("m.py", None, nested)
    assert report.problems == []
    assert (len(report.notes) == 1) == (sys.version_info < (3, 12))
    plain = b'x = 1\nprint(f"{x}", y=1, 2)\n'  # an f-string on the line, but a real error
    assert lines_of(check_file("m.py", None, plain).problems) == [2]
    compiled = b'return f"{x}"\n'  # a compile-time error is never the interpreter's age
    assert "'return' outside function" in check_file("m.py", None, compiled).problems[0]


def test_templated_yaml_errors_are_notes() -> None:
    source = b"apiVersion: v1\nkind: Service\n{{- if .Values.enabled }}\nmetadata:\n  name: x\n{{- end }}\n"
    report = check_file("chart/templates/svc.yaml", b"apiVersion: v1\n", source)
    assert report.problems == []
    assert report.notes and "templated YAML" in report.notes[0]


def test_many_errors_are_capped_per_file() -> None:
    source = "package a\n\n" + "".join(f"func f{i}() {{ x := ) }}\n" for i in range(25))
    report = check_file("a.go", None, source.encode())
    assert len(report.problems) == MAX_ERRORS_PER_FILE
    assert "(and 15 more syntax errors in this file)" in report.problems[0]


def test_syntax_errors_rejects_an_unknown_language() -> None:
    with pytest.raises(ValueError, match="cobol"):
        syntax_errors("cobol", b"")


# --------------------------------------------------------------------------------------------
# The whole change, from real git trees


def test_check_change_on_a_real_repository(repo: Repo) -> None:
    repo.write("calc.py", SAMPLES["python"][1])
    repo.write("web/app.ts", SAMPLES["typescript"][1])
    repo.write("conf.yaml", "a: 1\nb: [1, 2\n")  # broken at T0
    repo.write("gone.go", SAMPLES["go"][1])
    repo.write("docs/notes.md", "# notes\n")
    repo.write("lib.py", "def helper():\n    return 1\n\n\ndef main():\n    return helper()\n")
    t0 = repo.commit_all("t0")

    _p, py, (old, new, line), _e = SAMPLES["python"]
    repo.write("calc.py", replace_once(py, old, new))  # a syntax error at line 9
    repo.write(
        "web/app.ts", replace_once(SAMPLES["typescript"][1], "return a + b;", "return b + a;")
    )
    repo.write("conf.yaml", "a: 2\nb: [1, 2\n")  # still broken, not by the change
    (repo.root / "gone.go").unlink()
    repo.write("docs/notes.md", "# notes\n\nmore\n")
    repo.write("img/logo.json", b"\x00\x01binary")
    (repo.root / "link.py").symlink_to("calc.py")
    repo.write("lib.py", "def assist():\n    return 1\n\n\ndef main():\n    return helper()\n")
    t1 = repo.commit_all("t1")

    git = Git(repo.root)
    changes = diff_trees(git, t0, t1)
    report = check_change(git, changes)
    assert report.problems == [
        f"calc.py:{line}:16: syntax error, '(' was never closed: return a * (b",
        "lib.py:6:12: 'helper' is still used here, but the change removed or renamed its "
        "module-level definition (defined at line 1 before)",
    ]
    assert report.checked == 4  # calc.py, conf.yaml, lib.py, web/app.ts
    assert sorted(report.parse_ms) == ["calc.py", "conf.yaml", "lib.py", "web/app.ts"]
    assert all(ms >= 0 for ms in report.parse_ms.values())
    assert report.notes == [
        "docs/notes.md: not parsed: unknown language",
        "img/logo.json: not parsed: binary or not UTF-8 (json)",
    ]
    assert check_change(git, list(reversed(changes))).problems == report.problems


# --------------------------------------------------------------------------------------------
# Performance: printed, not asserted (the issue's target is a median under 20 ms per file)


def _python_file(seed: int, lines: int = 200) -> str:
    out = ["import os", "import sys", "from typing import Any", "", ""]
    i = 0
    while len(out) < lines:
        out += [
            f"def func_{seed}_{i}(a: int, b: int, c: Any = None) -> int:",
            f'    """Function {i} of module {seed}."""',
            "    total = 0",
            "    for x in range(a):",
            "        if x % 2 == 0:",
            "            total += x * b",
            "        else:",
            f"            total -= len(os.sep) + helper_{seed}(x)",
            "    return total + len([y for y in sys.argv if y])",
            "",
            "",
        ]
        i += 1
    out += [f"def helper_{seed}(x: int) -> int:", "    return x", ""]
    return "\n".join(out)


def _ts_file(seed: int, lines: int = 200) -> str:
    out = ['import { join } from "path";', ""]
    i = 0
    while len(out) < lines:
        out += [
            f"export function func{seed}_{i}(a: number, b: number): number {{",
            "  let total = 0;",
            "  for (let x = 0; x < a; x++) {",
            "    if (x % 2 === 0) {",
            "      total += x * b;",
            "    } else {",
            f"      total -= helper{seed}(x) + join('a', 'b').length;",
            "    }",
            "  }",
            "  return total;",
            "}",
            "",
        ]
        i += 1
    out += [f"function helper{seed}(x: number): number {{", "  return x;", "}", ""]
    return "\n".join(out)


def test_parse_time_per_changed_file(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    files: dict[str, str] = {}
    for seed in range(200):
        if seed % 2:
            files[f"pkg/mod_{seed}.ts"] = _ts_file(seed)
        else:
            files[f"pkg/mod_{seed}.py"] = _python_file(seed)
    for path, text in files.items():
        repo.write(path, text)
    t0 = repo.commit_all("t0")
    for path, text in files.items():  # a small valid edit in every file
        if path.endswith(".py"):
            repo.write(path, text.replace("    total = 0", "    total = 1", 1))
        else:
            repo.write(path, text.replace("  let total = 0;", "  let total = 1;", 1))
    t1 = repo.commit_all("t1")
    git = Git(repo.root)
    changes = diff_trees(git, t0, t1)
    start = time.perf_counter()
    report = check_change(git, changes)
    wall = time.perf_counter() - start
    assert report.problems == [] and report.checked == 200

    # the costlier case: every file gets a syntax error, so both sides are parsed
    broken_ms = []
    for path, text in files.items():
        before = text.encode()
        after = (text + "\n)\n").encode()
        t = time.perf_counter()
        assert check_file(path, before, after).problems
        broken_ms.append((time.perf_counter() - t) * 1000)

    times = sorted(report.parse_ms.values())
    py = [ms for p, ms in report.parse_ms.items() if p.endswith(".py")]
    ts = [ms for p, ms in report.parse_ms.items() if p.endswith(".ts")]
    lines = statistics.mean(len(t.splitlines()) for t in files.values())
    with capsys.disabled():
        print(
            f"\n[AST_VALIDATE perf] {len(times)} changed files of ~{lines:.0f} lines: "
            f"median {statistics.median(times):.2f} ms/file "
            f"(python {statistics.median(py):.2f}, typescript {statistics.median(ts):.2f}), "
            f"p90 {times[int(len(times) * 0.9)]:.2f} ms, max {times[-1]:.2f} ms; "
            f"with a new syntax error (both sides parsed) median "
            f"{statistics.median(broken_ms):.2f} ms; "
            f"check_change wall time incl. git {wall * 1000:.0f} ms"
        )
