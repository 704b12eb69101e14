"""Real SWE-bench-format instances from a project's own history on PyPI: two consecutive
source releases (sdists, which ship the tests) of more-itertools, SymPy or Django. The base
commit is the older release; the gold patch is the newer release's change to the package,
the test patch its change to the tests; FAIL_TO_PASS and PASS_TO_PASS are found by running
the tests with the repository's official runner (pytest, sympy's ``bin/test``, Django's
``tests/runtests.py``) and reading the log with its parser, as SWE-bench's validation
does: failing before the gold patch and passing after, passing both times. The only
network used is the package registry (``pip download``, the runner's packages).

SymPy's sdist leaves out ``bin/test``: the base commit adds one that takes the official
command's options (``-C``, ``--verbose``) and calls ``sympy.test`` as the repository's does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidegate.gym.swe_grade import PARSERS, PASSED

_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip

SYMPY_BIN_TEST = '''#!/usr/bin/env python
"""sympy's bin/test (left out of the sdist): the official command's options, then sympy.test."""
import os
import sys
from argparse import ArgumentParser

parser = ArgumentParser()
parser.add_argument("-v", "--verbose", action="store_true", default=False)
parser.add_argument("-C", "--no-cache", dest="cache", action="store_false", default=True)
parser.add_argument("paths", nargs="*")
options = parser.parse_args()
if not options.cache:
    os.environ["SYMPY_USE_CACHE"] = "no"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sympy  # noqa: E402

sys.exit(not sympy.test(*options.paths, verbose=options.verbose))
'''


@dataclass(frozen=True)
class Project:
    pypi: str
    repo: str
    gold: tuple[str, ...]
    """Pathspecs of the gold patch (the package) and of the test patch (its tests)."""
    tests: tuple[str, ...]
    runner: tuple[str, ...]
    parser: str
    packages: tuple[str, ...]
    """What the builder's runner needs (the grading environment follows swebench's specs)."""
    version: str | None = None
    """The specs' version key; None: the older release."""


MORE_ITERTOOLS = Project(
    "more-itertools", "more-itertools/more-itertools", ("more_itertools",), ("tests",),
    ("-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q"), "pytest", ("pytest",),
)  # fmt: skip
SYMPY = Project(
    "sympy", "sympy/sympy", ("sympy", ":(exclude,glob)sympy/**/tests/**"),
    (":(glob)sympy/**/tests/**",), ("bin/test", "-C", "--verbose"), "sympy", ("mpmath==1.3.0",),
)  # fmt: skip
DJANGO = Project(
    "django", "django/django", ("django",), ("tests",),
    ("tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1"),
    "django", ("-r", "tests/requirements/py3.txt"),
)  # fmt: skip

RELEASES = (("10.2.0", "10.3.0"), ("10.3.0", "10.4.0"), ("10.4.0", "10.5.0"))
"""more-itertools' releases."""
REAL = ((SYMPY, "1.10", "1.10.1", "1.10"), (DJANGO, "4.2.15", "4.2.16", "4.2"))
"""A SymPy and a Django instance from bug-fix releases (the specs' version last): ``diff`` with
a string variable (sympy#23222), and a password-reset mail failure logged (Django 4.2.16)."""


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=_ENV, check=True, capture_output=True,
                          input=None if input is None else input.encode())  # fmt: skip
    return done.stdout.decode()


def _named(cache: Path, name: str) -> Path | None:
    """What in ``cache`` is called ``name`` up to case and ``_``/``-`` (sdists vary)."""
    found = [p for p in cache.glob("*") if p.name.lower().replace("_", "-") == name]
    return found[0] if found else None


def sdist(project: Project, version: str, cache: Path) -> Path:
    """The release's source tree, downloaded once into ``cache``."""
    tree = _named(cache, f"{project.pypi}-{version}") if cache.is_dir() else None
    if tree is not None:
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "--disable-pip-version-check", "-d", str(cache), f"{project.pypi}=={version}"],
        check=True, capture_output=True,
    )  # fmt: skip
    archive_path = _named(cache, f"{project.pypi}-{version}.tar.gz")
    assert archive_path is not None, (project.pypi, version)
    with tarfile.open(archive_path) as archive:
        archive.extractall(cache, filter="data")
    return sdist(project, version, cache)


def runner_python(project: Project, repo: Path, cache: Path) -> str:
    """An interpreter with what the project's runner needs, made once with uv."""
    if project is MORE_ITERTOOLS:
        return sys.executable
    venv = cache / f"venv-{project.pypi}"
    if not (venv / "bin" / "python").exists():
        uv = shutil.which("uv") or "uv"
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True)
        args = [str(repo / p) if p.endswith(".txt") else p for p in project.packages]
        subprocess.run([uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *args],
                       check=True)  # fmt: skip
    return str(venv / "bin" / "python")


def _outcomes(
    project: Project, python: str, repo: Path, directives: list[str], patches: list[str]
) -> dict[str, str]:
    for patch in patches:
        _git(repo, "apply", "-", input=patch)
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1",
           "PATH": f"{Path(python).parent}:{os.environ['PATH']}"}  # fmt: skip
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([python, *project.runner, *directives], cwd=repo, env=env,
                          capture_output=True, text=True)  # fmt: skip
    _git(repo, "reset", "-q", "--hard", "HEAD")
    _git(repo, "clean", "-fdxq")
    return PARSERS[project.parser](done.stdout + done.stderr)


def _directives(project: Project, test_patch: str) -> list[str]:
    files = sorted({line.split(" b/", 1)[1] for line in test_patch.splitlines()
                    if line.startswith("diff --git ") and line.endswith(".py")})  # fmt: skip
    if project is DJANGO:
        return [f.removeprefix("tests/").removesuffix(".py").replace("/", ".") for f in files]
    return files


def _base(project: Project, old: str, repo: Path, cache: Path) -> str:
    shutil.copytree(sdist(project, old, cache), repo,
                    ignore=shutil.ignore_patterns("PKG-INFO", "*.egg-info"))  # fmt: skip
    if project is SYMPY:
        (repo / "bin" / "test").write_text(SYMPY_BIN_TEST)
        (repo / "bin" / "test").chmod(0o755)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{project.pypi} {old}")
    return _git(repo, "rev-parse", "HEAD").strip()


def _patches(project: Project, repo: Path, new: Path) -> tuple[str, str]:
    """The newer release's change to the package and to the tests."""
    for folder in {spec.split(")")[-1].split("/")[0] for spec in project.gold + project.tests}:
        shutil.rmtree(repo / folder)
        shutil.copytree(new / folder, repo / folder)
    _git(repo, "add", "-A")
    gold = _git(repo, "diff", "--cached", "HEAD", "--", *project.gold)
    tests = _git(repo, "diff", "--cached", "HEAD", "--", *project.tests)
    _git(repo, "reset", "-q", "--hard", "HEAD")
    _git(repo, "clean", "-fdxq")
    return gold, tests


def release_instance(
    old: str, new: str, mirrors: Path, cache: Path, project: Project = MORE_ITERTOOLS,
    version: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The instance ``old`` -> ``new`` on a mirror under ``mirrors`` named as the
    instance's repo (more-itertools: one repository per instance, ``<name>-<old>``)."""
    name = project.repo.split("/")[1]
    repo_name = f"{project.repo}-{old}" if project is MORE_ITERTOOLS else project.repo
    repo = mirrors / repo_name.replace("/", "__")
    commit = _base(project, old, repo, cache)
    gold, tests = _patches(project, repo, sdist(project, new, cache))
    directives, python = _directives(project, tests), runner_python(project, repo, cache)
    before = _outcomes(project, python, repo, directives, [tests])
    after = _outcomes(project, python, repo, directives, [gold, tests])
    f2p = sorted(t for t, s in after.items() if s == PASSED and before.get(t) != PASSED)
    p2p = sorted(t for t, s in after.items() if s == PASSED and before.get(t) == PASSED)
    row: dict[str, Any] = {
        "instance_id": f"{name}__{old}-{new}", "repo": repo_name, "base_commit": commit,
        "problem_statement": f"The changes of {project.pypi} {new}.", "patch": gold,
        "test_patch": tests, "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
        "version": version or old,
    }  # fmt: skip
    if project is not MORE_ITERTOOLS:  # the specs name Python 3.9, not on this machine
        row["environment"] = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    return row
