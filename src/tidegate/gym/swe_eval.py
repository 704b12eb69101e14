"""One prediction graded the way the official harness grades it, on the environment's
testbed (reset to the base commit, never copied):

1. the candidate patch is applied (``git apply``; one that does not apply is ``error``,
   as swebench counts it);
2. its changes to the test patch's files, to any ``conftest.py`` and to pytest's
   configuration (``pytest.ini``, ``tox.ini [pytest]``, ``setup.cfg [tool:pytest]``,
   ``pyproject.toml [tool.pytest.*]``, wherever they are) are undone and listed in the
   report: they never count;
3. the test patch is applied after the candidate;
4. the official test command runs once, over the test patch's test files (not its data
   files), contained, its output kept as ``test_output.txt`` beside ``report.json``;
5. the log is read with the repository's parser and graded (``swe_grade``).

The code under test must be the checkout's: a pytest run loads a small plugin (from
the environment, outside the testbed) that prints where each of the checkout's top-level modules
was imported from; other runners get the same answer from a probe run first. A module
imported from outside the testbed (an installed copy) makes the result ``error``; from a
file the candidate planted elsewhere in the testbed, ``unresolved``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from tidegate.exec.containment import policy_for
from tidegate.exec.guard import Clearance
from tidegate.gym.swe_env import Environment, benchmark_run, git
from tidegate.gym.swe_grade import (
    EMPTY_PATCH,
    END,
    EXIT_CODE,
    HARNESS_ERROR,
    START,
    UNRESOLVED,
    harness_failure,
    imported_anew,
    read_log,
    resolution,
    split_tests,
)
from tidegate.gym.swe_instances import Instance
from tidegate.gym.swe_specs import (
    PYTEST_CONFIG_FILES,
    RunSpec,
    patch_files,
    protected_paths,
    pytest_section,
)

ORIGIN = ">>>>> Module Origin:"
_PLUGIN = "tidegate_gym_origin"
_PLUGIN_SOURCE = f'''"""tidegate gym: where the checkout's top-level modules were imported from."""
import os
import sys


def pytest_terminal_summary(terminalreporter):
    for name in os.environ.get("TIDEGATE_OWN_MODULES", "").split(","):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) if module is not None else None
        if path:
            terminalreporter.write_line("{ORIGIN} " + name + " " + os.path.realpath(path))
'''
_PROBE = (
    "import importlib.util, os, sys\n"
    "sys.path.insert(0, os.getcwd())\n"
    "for name in os.environ.get('TIDEGATE_OWN_MODULES', '').split(','):\n"
    "    spec = importlib.util.find_spec(name) if name else None\n"
    "    if spec is not None and spec.origin:\n"
    f"        print('{ORIGIN}', name, os.path.realpath(spec.origin))\n"
)


class Graded(msgspec.Struct):
    """One prediction's grade: swebench's ``report.json`` fields and tidegate's."""

    instance_id: str
    status: str
    patch_is_none: bool = False
    patch_exists: bool = False
    applied: bool = False
    tests: dict[str, Any] | None = None
    undone: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    time_s: float = 0.0
    test_time_s: float = 0.0
    log: str | None = None
    """The test command's output (``test_output.txt``), when it ran."""

    def report(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "patch_is_None": self.patch_is_none,
            "patch_exists": self.patch_exists,
            "patch_successfully_applied": self.applied,
            "resolved": self.status == "resolved",
        }
        if self.tests is not None:
            body["tests_status"] = self.tests
        body["tidegate"] = {"status": self.status, "undone": self.undone, "notes": self.notes,
                            "time_s": round(self.time_s, 3), "test_time_s": round(self.test_time_s, 3)}  # fmt: skip
        return {self.instance_id: body}


def grade(
    instance: Instance,
    patch: str | None,
    env: Environment,
    spec: RunSpec,
    clearance: Clearance,
) -> Graded:
    """Grade ``patch`` for ``instance`` on ``env`` (the test log in ``Graded.log``)."""
    started = time.monotonic()
    result = Graded(
        instance.instance_id, HARNESS_ERROR, patch is None, bool(patch and patch.strip())
    )
    if not result.patch_exists:
        result.status = EMPTY_PATCH
        return result
    assert patch is not None
    try:
        _grade(instance, patch, env, spec, clearance, result)
    finally:
        result.time_s = time.monotonic() - started
    return result


def _grade(
    instance: Instance,
    patch: str,
    env: Environment,
    spec: RunSpec,
    clearance: Clearance,
    result: Graded,
) -> None:
    bed, base = env.testbed, instance.base_commit
    failure = _reset(bed, base)
    if failure:
        result.notes.append(f"testbed reset failed: {failure}")
        return
    applied = _apply(bed, patch)
    if applied is not None:
        result.notes.append(f"the patch did not apply: {applied}")
        return
    result.applied = True
    touched = patch_files(patch)
    result.undone = _undo(bed, base, touched, spec)
    applied = _apply(bed, instance.test_patch)
    if applied is not None:
        result.notes.append(f"the test patch did not apply after the candidate: {applied}")
        return
    own = own_modules(patch_files(instance.patch) + touched, bed, spec)
    log, test_time = run_tests(env, spec, own, clearance)
    result.test_time_s, result.log = test_time, log
    statuses = read_log(log, spec.log_parser)
    tests = instance.fail_to_pass + instance.pass_to_pass
    why = harness_failure(log, statuses, tests, _candidates(patch, touched, bed))
    if why is not None:
        result.notes.append(why)
        return
    assert statuses is not None
    status = split_tests(statuses, instance.fail_to_pass, instance.pass_to_pass)
    result.tests = status.as_json()
    result.status = resolution(status)
    shadowed = _shadowed(log, own, bed)
    if shadowed:
        outside = [s for s in shadowed if not s[1].startswith(str(bed) + "/")]
        result.status = HARNESS_ERROR if outside else UNRESOLVED
        result.notes += [
            f"the tests imported {n} from {p}, not the checkout's" for n, p in shadowed
        ]


def _candidates(patch: str, touched: tuple[str, ...], bed: Path) -> frozenset[str]:
    """The modules a candidate can have made missing: those its patch imports anew, and
    the top-level modules of the files it touched that are gone from the testbed. (The
    checkout's own package, present yet not importable, is the environment's fault.)"""
    gone = set()
    for name in touched:
        parts = name.split("/")
        if parts[0] in ("src", "lib") and len(parts) > 1:
            parts = [parts[0] + "/" + parts[1], *parts[2:]]
        if not (bed / parts[0]).exists():
            gone.add(parts[0].rsplit("/", 1)[-1].removesuffix(".py"))
    return frozenset(imported_anew(patch) | gone)


def _reset(bed: Path, base: str) -> str | None:
    for step in (
        git(bed, "checkout", "-q", "-f", "--detach", base),
        git(bed, "clean", "-ffdxq", "-e", "*.egg-info"),
    ):
        if step.returncode != 0:
            return str(step.stderr.strip()[:300])
    return None


def _apply(bed: Path, patch: str) -> str | None:
    for extra in ((), ("--reject",)):
        res = git(bed, "apply", "--whitespace=nowarn", *extra, "-", input=patch)
        if res.returncode == 0:
            return None
    return str(res.stderr.strip()[:300])


def _undo(bed: Path, base: str, touched: tuple[str, ...], spec: RunSpec) -> list[str]:
    """Undo the candidate's changes that never count; the paths undone."""
    undone = [f for f in touched if _safe(f) and f in protected_paths(touched, spec)]
    for name in touched:
        config = _safe(name) and name.rsplit("/", 1)[-1] in PYTEST_CONFIG_FILES
        if config and name not in undone and _changed_config(bed, base, name):
            undone.append(name)
    for name in undone:
        _restore(bed, base, name)
    return undone


def _safe(name: str) -> bool:
    return not name.startswith("/") and ".." not in name.split("/")


def _at_base(bed: Path, base: str, name: str) -> str | None:
    res = git(bed, "show", f"{base}:{name}")
    return str(res.text) if res.returncode == 0 else None


def _changed_config(bed: Path, base: str, name: str) -> bool:
    return _pytest_config(bed, base, name, None) != _pytest_config(bed, base, name, bed)


def _pytest_config(bed: Path, base: str, name: str, tree: Path | None) -> str | None:
    if tree is None:
        text = _at_base(bed, base, name)
    else:
        path = tree / name
        text = path.read_text("utf-8", "replace") if path.is_file() else None
    return None if text is None else pytest_section(text, name.rsplit("/", 1)[-1])


def _restore(bed: Path, base: str, name: str) -> None:
    path = bed / name
    parent, root = os.path.realpath(path.parent), os.path.realpath(bed)
    if parent != root and not parent.startswith(root + os.sep):
        return  # beyond a link the candidate planted: nothing outside is touched
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if _at_base(bed, base, name) is not None:
        git(bed, "checkout", "-q", base, "--", name)


def own_modules(files: tuple[str, ...], bed: Path, spec: RunSpec) -> dict[str, str]:
    """The checkout's top-level modules the patches touch, and where each must be
    imported from (a path prefix inside the testbed)."""
    own: dict[str, str] = {}
    for name in files:
        parts = name.split("/")
        if not name.endswith(".py") or name in spec.test_files or not _safe(name):
            continue
        prefix = ""
        if parts[0] in ("src", "lib") and len(parts) > 1:
            prefix, parts = parts[0] + "/", parts[1:]
        top = parts[0].removesuffix(".py")
        if not top.isidentifier() or top in ("tests", "test", "testing", "conftest", "setup"):
            continue
        where = bed / (prefix + parts[0])
        if where.exists():
            own.setdefault(top, str(where) + ("/" if where.is_dir() else ""))
    return own


def _shadowed(log: str, own: dict[str, str], bed: Path) -> list[tuple[str, str]]:
    found = []
    for name, path in re.findall(rf"^{re.escape(ORIGIN)} (\w+) (.+)$", log, re.M):
        want = own.get(name)
        if want is not None and not (path == want or path.startswith(want)):
            found.append((name, path))
    return found


def run_tests(
    env: Environment, spec: RunSpec, own: dict[str, str], clearance: Clearance
) -> tuple[str, float]:
    """The official test command, once, contained (the testbed writable, no network);
    its log between swebench's markers, and how long the command ran."""
    plugin_dir = env.root / "plugin"  # outside the testbed, shown read-only
    plugin = plugin_dir / f"{_PLUGIN}.py"
    if not plugin.is_file() or plugin.read_text() != _PLUGIN_SOURCE:
        plugin_dir.mkdir(exist_ok=True)
        plugin.write_text(_PLUGIN_SOURCE)
    pytest = spec.runs_pytest
    probe = "" if pytest else f"python -c {shlex.quote(_PROBE)}\n"
    command = spec.test_cmd
    if command.startswith("pytest ") and not (Path(env.bin_dir) / "pytest").exists():
        command = f"python -m {command}"  # an interpreter given with --python, no script
    script = (
        "".join(f"{line}\n" for line in spec.exports) + f"{probe}echo {shlex.quote(START)}\n"
        f"{command} {' '.join(shlex.quote(d) for d in spec.directives)}\n"
        f'code=$?\necho {shlex.quote(END)}\necho "{EXIT_CODE}: $code"\n'
    )
    env_vars = {
        "PATH": f"{env.bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(env.testbed),
        "PYTHONPATH": str(plugin_dir),
        "TIDEGATE_OWN_MODULES": ",".join(own),
    }
    if pytest:
        env_vars["PYTEST_PLUGINS"] = _PLUGIN
    policy = policy_for("auto", network=False, writable=(env.testbed,))
    assert policy is not None
    policy = replace(policy, executables=(env.python,), shares=((plugin_dir, plugin_dir),))
    res, log = benchmark_run(
        ["/bin/sh", "-c", script], env.testbed, policy, clearance, "tests", env_vars
    )
    return log.decode("utf-8", "replace"), res.duration_s
