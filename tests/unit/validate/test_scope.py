"""Scope integrity: definitions the change removed while still used, and new uses of names
defined nowhere; and, above all, no false alarms on valid Python."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tidegate.validate.scope import scope_problems
from tidegate.validate.scope.lines import LineDiff
from tidegate.validate.scope.problem import ScopeProblem
from tidegate.validate.syntax import check_file


def src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def names_at(problems: list[ScopeProblem]) -> list[tuple[str, int]]:
    return [(p.message.split("'")[1], p.line) for p in problems]


# --------------------------------------------------------------------------------------------
# Python (a): a module-level definition removed or renamed, still used

BASE = src(
    """
    import os
    from collections import OrderedDict as OD

    LIMIT = 10


    def helper(x):
        return x * 2


    class Widget:
        def size(self):
            return helper(LIMIT)


    def main():
        w = Widget()
        return helper(w.size()) + len(os.sep) + len(OD())
    """
)


def test_removed_function_still_called_is_reported() -> None:
    after = BASE.replace(b"def helper(x):\n    return x * 2\n", b"")
    problems = scope_problems("app.py", BASE, after)
    assert names_at(problems) == [("helper", 11)]
    assert problems[0].message.startswith("'helper' is still used here")
    assert "removed or renamed" in problems[0].message
    assert "defined at line 7 before" in problems[0].message
    assert "also used at line 16" in problems[0].message
    # through the file-level API, formatted path:line:col
    report = check_file("pkg/app.py", BASE, after)
    assert report.problems == [f"pkg/app.py:11:16: {problems[0].message}"]


def test_renamed_class_still_used_is_reported() -> None:
    after = BASE.replace(b"class Widget:", b"class Gadget:")
    problems = scope_problems("app.py", BASE, after)
    assert names_at(problems) == [("Widget", 17)]
    assert problems[0].column == 9


def test_removed_import_and_constant_still_used_are_reported() -> None:
    after = BASE.replace(b"import os\n", b"").replace(b"LIMIT = 10\n", b"")
    problems = scope_problems("app.py", BASE, after)
    assert sorted(names_at(problems)) == [("LIMIT", 11), ("os", 16)]


def test_removed_definition_no_longer_used_is_fine() -> None:
    after = BASE.replace(b"import os\n", b"").replace(b" + len(os.sep)", b"")
    assert scope_problems("app.py", BASE, after) == []


def test_definition_moved_or_rebound_elsewhere_is_fine() -> None:
    moved = BASE.replace(b"def helper(x):\n    return x * 2\n", b"").replace(
        b"import os\n", b"import os\nfrom .util import helper\n"
    )
    assert scope_problems("app.py", BASE, moved) == []
    conditional = BASE.replace(
        b"LIMIT = 10\n", b"try:\n    from .conf import LIMIT\nexcept ImportError:\n    LIMIT = 5\n"
    )
    assert scope_problems("app.py", BASE, conditional) == []
    via_global = BASE.replace(b"LIMIT = 10\n", b"def setup():\n    global LIMIT\n    LIMIT = 3\n")
    assert scope_problems("app.py", BASE, via_global) == []


def test_removed_name_only_shadowed_by_locals_is_fine() -> None:
    before = src(
        """
        value = 1


        def f(value):
            return value


        def g():
            value = 2
            return [value for value in range(value)]
        """
    )
    after = before.replace(b"value = 1\n", b"")
    assert scope_problems("m.py", before, after) == []


def test_removed_name_read_from_a_method_via_the_class_body_is_reported() -> None:
    # a class body's names are not visible in its methods: this is a real NameError
    before = src(
        """
        size = 3


        class Box:
            size = 4

            def area(self):
                return size * size
        """
    )
    after = before.replace(b"size = 3\n", b"")
    assert names_at(scope_problems("m.py", before, after)) == [("size", 7)]


# --------------------------------------------------------------------------------------------
# Python (b): a new use of a name defined nowhere


def test_new_use_of_an_undefined_name_is_reported() -> None:
    after = BASE.replace(b"return x * 2", b"return x * factor + undefined_total")
    problems = scope_problems("app.py", BASE, after)
    assert names_at(problems) == [("factor", 8), ("undefined_total", 8)]
    assert "is not defined" in problems[0].message
    assert problems[0].column == 16


def test_undefined_name_in_a_new_file_is_reported_once_with_its_other_lines() -> None:
    after = src(
        """
        def f():
            return missing_name


        def g():
            return missing_name + 1
        """
    )
    problems = scope_problems("new.py", None, after)
    assert names_at(problems) == [("missing_name", 2)]
    assert "also used at line 6" in problems[0].message


def test_undefined_name_already_there_at_t0_is_not_blamed() -> None:
    before = src(
        """
        def f():
            return legacy_global + 1
        """
    )
    after = before.replace(b"+ 1", b"+ 2")  # the line is changed, the bad name was there
    assert scope_problems("m.py", before, after) == []
    unchanged = before + b"\n\ndef g():\n    return 3\n"  # not on a changed line
    assert scope_problems("m.py", before, unchanged) == []


def test_undefined_name_when_t0_did_not_parse() -> None:
    before = b"def f(:\n    return legacy + 1\n"
    after = b"def f():\n    return legacy + brand_new\n"
    assert names_at(scope_problems("m.py", before, after)) == [("brand_new", 2)]


# --------------------------------------------------------------------------------------------
# No false positives: every construct that binds a name

VALID_MODULES = {
    "builtins": """
        print(len([]), sorted({1}), isinstance(1, int), __name__, __file__, __doc__)
        raise SystemExit(ValueError, NotImplemented, Ellipsis, __debug__, _("x"))
        """,
    "imports": """
        import os.path
        import xml.etree.ElementTree as ET
        from typing import TYPE_CHECKING
        from . import sibling
        from ..pkg import thing as other
        if TYPE_CHECKING:
            from collections.abc import Iterator
        print(os.path.sep, ET, sibling, other)
        def f() -> Iterator[int]:
            yield 1
        """,
    "parameters": """
        def f(a, /, b, *args, c, d=1, **kwargs):
            return a, b, args, c, d, kwargs
        g = lambda x, *y, z=0, **w: (x, y, z, w)
        async def h(session):
            async with session as s:
                async for item in s:
                    await item
        """,
    "comprehensions": """
        pairs = [(x, y) for x in range(3) for y in range(x) if x != y]
        table = {k: v for k, v in pairs}
        total = sum(n * n for n in range(10))
        nested = [[c for c in row] for row in pairs]
        unique = {w.lower() for w in "a b".split()}
        """,
    "globals": """
        def configure():
            global SETTING, OTHER
            SETTING = 1
        def use():
            return SETTING + OTHER
        """,
    "nonlocal": """
        def counter():
            count = 0
            def inc():
                nonlocal count
                count += 1
                return count
            return inc
        """,
    "class attributes via self": """
        class Account:
            rate = 0.1
            kinds = [n for n in range(3)]
            def __init__(self, balance):
                self.balance = balance
            def interest(self):
                return self.balance * self.rate + len(self.kinds)
            def who(self):
                return __class__, super().__repr__()
        """,
    "defined later in the module": """
        def main():
            return helper() + CONSTANT + Later().x
        def helper():
            return 1
        CONSTANT = 2
        class Later:
            x = 3
        if __name__ == "__main__":
            main()
        """,
    "del": """
        temp = 1
        del temp
        def f(cache):
            value = cache.pop()
            del value
        """,
    "try except as": """
        try:
            import json
        except ImportError as exc:
            json = None
            print(exc)
        try:
            pass
        except* (ValueError, TypeError) as group:
            print(group.exceptions)
        """,
    "walrus": """
        import re
        if (m := re.match("a", "a")) is not None:
            print(m.group(0))
        values = [y for x in range(5) if (y := x * 2) > 2]
        print(y, values)
        def f(data):
            while (chunk := data.read()):
                print(chunk)
        """,
    "match captures": """
        def handle(command):
            match command:
                case {"action": action, **rest}:
                    return action, rest
                case [first, *others]:
                    return first, others
                case Point(x=px, y=py) as point:
                    return px, py, point
                case str() | bytes() as raw:
                    return raw
                case _:
                    return None
        class Point:
            x = y = 0
        """,
    "with, for and augmented assignment targets": """
        with open("f") as (handle):
            for index, (left, right) in enumerate(zip(handle, handle)):
                print(index, left, right)
        counter = 0
        counter += 1
        [a, *b] = (1, 2, 3)
        print(a, b)
        """,
    "decorators and annotations": """
        import functools
        from dataclasses import dataclass
        @dataclass
        class Point:
            x: int
            y: "Undefined"
        @functools.cache
        def area(p: Point) -> int:
            return p.x * p.x
        """,
    "star import": """
        from os.path import *
        print(join("a", "b"), whatever_the_star_provides)
        """,
    "dynamic globals": """
        globals()["made_up"] = 1
        print(made_up)
        """,
    "guarded by except NameError or a version test": """
        import sys
        PY2 = sys.version_info[0] == 2
        try:
            shell = get_ipython_like()
        except NameError:
            shell = None
        if sys.version_info >= (3, 15):
            table = frozenset_dict_of_the_future()
        if PY2:
            text = unicode_like("x")
        """,
    "silenced by a comment": """
        value = injected_by_framework  # noqa: F821
        other = also_injected  # type: ignore[name-defined]
        third = from_elsewhere  # noqa
        """,
    "enum _convert_": """
        import enum
        enum.IntEnum._convert_("Flags", __name__, lambda n: n.startswith("F_"))
        print(F_ONE)
        """,
    "another function's local (bound somewhere)": """
        def f():
            shared = 1
            return shared
        def g():
            return shared
        """,
}


@pytest.mark.parametrize("name", sorted(VALID_MODULES))
def test_no_false_positive(name: str) -> None:
    after = src(VALID_MODULES[name])
    assert scope_problems("m.py", None, after) == []  # a new file: every line is changed
    assert check_file("m.py", None, after).problems == []


def test_type_parameters_are_not_reported() -> None:
    after = src(
        """
        def first[T](items: list[T]) -> T:
            return items[0]


        class Box[K, V]:
            def get(self, key: K) -> V:
                raise KeyError(key)


        type Pairs[X] = list[tuple[X, X]]


        def use() -> Pairs[int]:
            return [(1, 1)]
        """
    )
    assert scope_problems("m.py", None, after) == []
    report = check_file("m.py", None, after)
    assert report.problems == []
    if sys.version_info < (3, 12):  # this interpreter cannot parse PEP 695: a note says so
        assert report.notes and "type parameters" in report.notes[0]


def test_star_import_or_dynamic_globals_skip_the_file_with_a_note() -> None:
    before = BASE
    after = BASE.replace(b"import os\n", b"from os import *\n").replace(b"LIMIT = 10\n", b"")
    assert scope_problems("app.py", before, after) == []
    report = check_file("app.py", before, after)
    assert report.problems == []
    assert report.notes == ["app.py: scope not checked: the file has a star import (line 1)"]
    unchanged_star = BASE.replace(b"import os\n", b"import os\nfrom os.path import *\n")
    assert scope_problems("app.py", unchanged_star, unchanged_star + b"x = nowhere\n") == []


def test_only_comments_about_undefined_names_silence_the_check() -> None:
    after = b"x = missing_a  # type: ignore[arg-type]\ny = missing_b  # noqa: E501\n"
    assert names_at(scope_problems("m.py", None, after)) == [("missing_a", 1), ("missing_b", 2)]


def test_reading_globals_or_builtins_keeps_the_check() -> None:
    after = src(
        """
        import builtins
        import sys

        handler = globals().get("handler_" + sys.argv[0])
        known = "x" in globals() and vars(sys) and builtins.open
        print(handler, known, brand_new_name)
        """
    )
    assert names_at(scope_problems("m.py", None, after)) == [("brand_new_name", 6)]
    for dynamic in (
        'globals()["made"] = 1\n',
        "globals().update(made=1)\n",
        "import builtins\nbuiltins.made = 1\n",
        "import builtins as b\nsetattr(b, 'made', 1)\n",
        "import sys\nsetattr(sys.modules[__name__], 'made', 1)\n",
        "locals()['made'] = 1\n",
        "exec('made = 1')\n",
    ):
        report = check_file("m.py", None, (dynamic + "print(made)\n").encode())
        assert report.problems == [], dynamic
        assert report.notes and "scope not checked" in report.notes[0], dynamic


def test_names_in_a_string_annotation_are_not_checked() -> None:
    assert scope_problems("m.py", None, b"def f(x: 'Nowhere') -> 'Nothing':\n    return x\n") == []


def test_an_unparseable_file_gets_no_scope_check() -> None:
    assert scope_problems("m.py", BASE, b"def broken(:\n    return helper_gone\n") == []


# --------------------------------------------------------------------------------------------
# JavaScript / TypeScript: (a) for top-level declarations

JS_BASE = src(
    """
    import { readFile } from "fs";
    import * as path from "path";

    export function parse(text) {
      return JSON.parse(text);
    }

    export class Store {
      constructor(dir) {
        this.dir = dir;
      }
    }

    const DEFAULTS = { size: 1 };

    export function load(dir) {
      const store = new Store(dir);
      return parse(readFile(path.join(dir, "x.json"))) || { ...DEFAULTS, store };
    }
    """
)


def test_js_removed_function_still_called_is_reported() -> None:
    after = JS_BASE.replace(b"export function parse(text) {\n  return JSON.parse(text);\n}\n", b"")
    problems = scope_problems("lib/store.js", JS_BASE, after)
    assert names_at(problems) == [("parse", 15)]
    assert "top-level declaration (declared at line 4 before)" in problems[0].message
    report = check_file("lib/store.js", JS_BASE, after)
    assert report.problems == [f"lib/store.js:15:10: {problems[0].message}"]


def test_js_renamed_class_and_removed_const_and_import_are_reported() -> None:
    after = (
        JS_BASE.replace(b"export class Store {", b"export class Repository {")
        .replace(b"const DEFAULTS = { size: 1 };\n", b"")
        .replace(b'import * as path from "path";\n', b"")
    )
    problems = scope_problems("lib/store.js", JS_BASE, after)
    assert sorted(names_at(problems)) == [("DEFAULTS", 16), ("Store", 15), ("path", 16)]


@pytest.mark.parametrize("language_path", ["lib/store.ts", "lib/store.tsx", "lib/store.mjs"])
def test_ts_and_tsx_removed_declarations_are_reported(language_path: str) -> None:
    before = src(
        """
        export interface Options { size: number }

        export function makeStore(options: Options): Store {
          return new Store(options.size);
        }

        export class Store {
          constructor(public size: number) {}
        }

        export const store = makeStore({ size: 1 });
        """
    )
    if language_path.endswith(".mjs"):
        before = (
            before.replace(b"export interface Options { size: number }\n", b"")
            .replace(b"(options: Options): Store", b"(options)")
            .replace(b"(public size: number) {}", b"(size) { this.size = size; }")
        )
    after = before.replace(b"export class Store", b"export class Storage")
    problems = scope_problems(language_path, before, after)
    assert [name for name, _line in names_at(problems)] == ["Store"]


JS_VALID_AFTER = {
    "parameter of the same name": b"function use(parse) { return parse(1); }\n",
    "local declaration": b"function use() { const parse = (x) => x; return parse(1); }\n",
    "destructured parameter": b"const use = ({ parse }) => parse(1);\n",
    "typeof guard": b"if (typeof parse === 'function') { console.log('x'); }\n",
    "property access only": b"const o = {}; o.parse(1); const p = { parse: 1 };\n",
    "re-imported": b'import { parse } from "./parse";\nparse(1);\n',
    "catch parameter": b"try { x(); } catch (parse) { console.log(parse); }\n",
    "export from another module": b'export { parse } from "./parse";\n',
    "html tag of the same name": b"const el = <parse />;\n",
}


@pytest.mark.parametrize("case", sorted(JS_VALID_AFTER))
def test_js_no_false_positive(case: str) -> None:
    before = b"export function parse(text) { return JSON.parse(text); }\n"
    after = b"export const marker = 1;\n" + JS_VALID_AFTER[case]
    assert scope_problems("a.jsx", before, after) == []


def test_js_scripts_are_not_checked_but_commonjs_modules_are() -> None:
    before = b"function parse(text) { return JSON.parse(text); }\nparse('1');\n"
    after = b"parse('1');\n"  # a script: parse may now come from another script's globals
    assert scope_problems("a.js", before, after) == []
    assert len(scope_problems("a.cjs", before, after)) == 1  # .cjs is always a module
    commonjs = b"const fs = require('fs');\nparse(fs);\n"
    assert names_at(scope_problems("a.js", before, commonjs)) == [("parse", 2)]
    exported = b"parse('1');\nmodule.exports = {};\n"
    assert names_at(scope_problems("a.js", before, exported)) == [("parse", 1)]


def test_js_removed_global_shadow_is_fine() -> None:
    before = b"const fetch = (u) => u;\nconst setTimeout = 1;\nfetch('x');\n"
    after = b"fetch('x');\nconsole.log(setTimeout);\n"
    assert scope_problems("a.mjs", before, after) == []


def test_js_type_only_use_is_not_reported() -> None:
    before = b"export class Store {}\nexport function f(s: Store) { return s; }\n"
    after = b"export function f(s: Store): Store { return s; }\n"
    assert scope_problems("a.ts", before, after) == []


# --------------------------------------------------------------------------------------------
# The line diff underneath


def test_line_diff() -> None:
    before = [b"a", b"b", b"c", b"d"]
    after = [b"a", b"B", b"c", b"x", b"d"]
    diff = LineDiff.of(before, after)
    assert diff.changed == {2, 4}
    assert diff.same == {1: 1, 3: 3, 5: 4}
    assert diff.old_range_of(2) == range(2, 3)
    assert diff.old_range_of(4) == range(4, 4)
    assert diff.old_range_of(1) == range(0)
    new = LineDiff.of(None, after)
    assert new.changed == {1, 2, 3, 4, 5} and new.same == {}
