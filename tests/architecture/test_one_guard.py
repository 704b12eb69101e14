"""One guard: no module outside ``tidegate.exec`` and the git wrapper starts a process.

Every process tidegate starts on someone's behalf must pass the guard in
``tidegate.exec.containment.launch`` (``tidegate.exec.guard``); a module that imported
``subprocess`` or called ``os.fork`` could start one around it. The check reads every
module's syntax tree: an import of a process-starting module, or a call of a
process-starting function, outside the allowed modules fails the build.

Not counted: ``concurrent.futures.ProcessPoolExecutor`` and Ray workers, which run
tidegate's own functions (each of which starts its commands through the guard), never a
command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tidegate

SRC = Path(tidegate.__file__).parent
ALLOWED = ("exec/", "git/")
"""The one runner (and the rest of ``tidegate.exec``), and the one git wrapper."""
MODULES = {"subprocess", "pexpect", "pty", "ptyprocess", "sh", "plumbum"}
OS_CALLS = {
    "fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp",
    "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
    "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe",
}  # fmt: skip
ASYNCIO_CALLS = {"create_subprocess_exec", "create_subprocess_shell"}


def violations(tree: ast.AST) -> list[str]:
    """Each process-starting import or call in ``tree``, as ``line: what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in MODULES:
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            names = {a.name for a in node.names}
            if root in MODULES:
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif root == "os" and names & OS_CALLS:
                found.append(f"{node.lineno}: from os import {', '.join(sorted(names & OS_CALLS))}")
            elif root == "asyncio" and names & ASYNCIO_CALLS:
                found.append(f"{node.lineno}: from asyncio import ...")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in OS_CALLS:
                found.append(f"{node.lineno}: os.{node.attr}")
            elif node.value.id == "asyncio" and node.attr in ASYNCIO_CALLS:
                found.append(f"{node.lineno}: asyncio.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            found.append(f"{node.lineno}: __import__(...)")
    return found


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def test_only_the_runner_and_the_git_wrapper_start_processes() -> None:
    offenders = []
    for path in _modules():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(ALLOWED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [f"tidegate/{rel}:{v}" for v in violations(tree)]
    assert not offenders, (
        "processes may start only through tidegate.exec (the guard) and the git wrapper:\n"
        + "\n".join(offenders)
    )


def test_the_scan_sees_every_module() -> None:
    modules = _modules()
    assert len(modules) > 200
    assert any(p.name == "runner.py" and p.parent.name == "exec" for p in modules)


def test_the_checker_catches_each_way_of_starting_a_process() -> None:
    # The mechanism itself: each spelling is caught (a checker that caught nothing would
    # pass the test above on any tree).
    for source in (
        "import subprocess",
        "import subprocess as sp",
        "from subprocess import run",
        "import pexpect",
        "from pty import spawn",
        "import os\nos.fork()",
        "import os\nos.execvp('x', ['x'])",
        "import os\nos.posix_spawnp('x', ['x'], {})",
        "import os\nf = os.system",
        "from os import popen",
        "import asyncio\nasyncio.create_subprocess_exec('x')",
        "__import__('subprocess')",
    ):
        assert violations(ast.parse(source)), source
    for source in ("import os\nos.getpid()", "from os import path", "import shutil"):
        assert not violations(ast.parse(source)), source
