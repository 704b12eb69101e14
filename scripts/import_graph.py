"""Print tidegate's import graph by package: floors, upward imports, cycles, sizes.

Run: .venv/bin/python scripts/import_graph.py [--modules]

A "unit" is a direct subpackage of tidegate (tidegate.flow) or a top-level module
(tidegate.git). Floors are assigned bottom-up over the unit graph with cycles
collapsed; an import between two units in one cycle is reported as a cycle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent / "src" / "tidegate"


def unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def sccs(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in nodes:
        if n not in index:
            visit(n)
    return out


def sizes() -> tuple[int, int, int, list[str]]:
    big_modules = lines = count = 0
    big_functions: list[str] = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        n = text.count("\n")
        lines += n
        count += 1
        big_modules += n > 400
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                span = (node.end_lineno or node.lineno) - node.lineno + 1
                if span > 60:
                    big_functions.append(f"{span:5d} {path.relative_to(ROOT)}: {node.name}")
    return count, lines, big_modules, big_functions


def main() -> None:
    graph = grimp.build_graph("tidegate")
    modules = sorted(graph.modules)
    units = sorted({unit(m) for m in modules if m != "tidegate"})
    uedges: dict[str, set[str]] = {u: set() for u in units}
    for m in modules:
        for dep in graph.find_modules_directly_imported_by(m):
            a, b = unit(m), unit(dep)
            if a != b and a != "tidegate" and b != "tidegate":
                uedges[a].add(b)
    comps = sccs(units, uedges)
    comp_of = {u: i for i, c in enumerate(comps) for u in c}
    floor: dict[int, int] = {}
    for i, comp in enumerate(comps):  # Tarjan emits sinks first
        deps = {comp_of[d] for u in comp for d in uedges[u]} - {i}
        floor[i] = 1 + max((floor[d] for d in deps), default=0)
    print(f"units: {len(units)}; floors: {max(floor.values())}")
    for f in range(1, max(floor.values()) + 1):
        names = [", ".join(c) for i, c in enumerate(comps) if floor[i] == f]
        print(f"  floor {f}: {'; '.join(names)}")
    unit_cycles = [c for c in comps if len(c) > 1]
    print(f"unit cycles: {len(unit_cycles)}")
    for c in unit_cycles:
        print("  ", " <-> ".join(c))
    # module-level cycles
    medges = {m: set(graph.find_modules_directly_imported_by(m)) for m in modules}
    mcycles = [c for c in sccs(modules, medges) if len(c) > 1]
    print(f"module cycles: {len(mcycles)}")
    for c in mcycles:
        print("  ", " <-> ".join(c))
    count, lines, big_m, big_f = sizes()
    print(
        f"modules: {count}; lines: {lines}; over 400 lines: {big_m}; functions over 60 lines: {len(big_f)}"
    )
    if "--modules" in sys.argv:
        for path in sorted(ROOT.rglob("*.py")):
            n = path.read_text().count("\n")
            if n > 400:
                print(f"  {n:5d} {path.relative_to(ROOT)}")
        for line in sorted(big_f):
            print(f"  {line}")


if __name__ == "__main__":
    main()
