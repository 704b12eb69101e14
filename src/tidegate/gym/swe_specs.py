"""What the official harness runs for an instance: the test command, its log parser, the
test directives taken from the test patch, and the files a candidate may not change.

The per-repository commands are those the ``swebench`` package's specs name (4.x
``MAP_REPO_VERSION_TO_SPECS``; from 5.0 they live in each task's ``eval.sh``): sympy's
``bin/test -C --verbose``, Django's ``tests/runtests.py --verbosity 2 --settings=test_sqlite
--parallel 1``, ``pytest -rA`` elsewhere. An instance may name its own (tidegate's
extension of the format, for repositories no spec covers): ``test_cmd`` and
``log_parser`` (``pytest``, ``django`` or ``sympy``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidegate.errors import UsageError
from tidegate.gym.swe_grade import PARSERS
from tidegate.gym.swe_instances import Instance

TEST_PYTEST = "pytest -rA"
TEST_DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
TEST_SYMPY = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"

_BY_REPO = {
    "django/django": (TEST_DJANGO, "django"),
    "sympy/sympy": (TEST_SYMPY, "sympy"),
}

_OTHER_PARSER = {
    "psf/requests": "pytest_options", "pydicom/pydicom": "pytest_options",
    "pylint-dev/pylint": "pytest_options", "astropy/astropy": "pytest_v2",
    "scikit-learn/scikit-learn": "pytest_v2", "sphinx-doc/sphinx": "pytest_v2",
    "matplotlib/matplotlib": "matplotlib", "mwaskom/seaborn": "seaborn",
}  # fmt: skip
"""Repositories whose swebench parser is a variant of pytest's not ported here."""

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml",
                 ".yaml", ".toml")  # fmt: skip
"""swebench's ``NON_TEST_EXTS``: files of a test patch that are not handed to the runner."""

PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
"""Where pytest reads its configuration; a candidate's change to the pytest part of any
of them is undone before grading."""


@dataclass(frozen=True)
class RunSpec:
    """How one instance's tests run and are read."""

    test_cmd: str
    log_parser: str
    directives: tuple[str, ...]
    test_files: tuple[str, ...]
    notes: tuple[str, ...] = ()


def patch_files(patch: str) -> tuple[str, ...]:
    """The files a patch touches, both sides (``diff --git a/X b/Y``), in order."""
    found: list[str] = []
    for a, b in re.findall(r"^diff --git a/(\S+) b/(\S+)$", patch, re.M):
        found += [a, b]
    return tuple(dict.fromkeys(found))


def spec_for(instance: Instance) -> RunSpec:
    test_cmd, parser = _BY_REPO.get(instance.repo, (TEST_PYTEST, "pytest"))
    test_cmd = str(instance.extra.get("test_cmd", test_cmd))
    parser = str(instance.extra.get("log_parser", parser))
    if parser not in PARSERS:
        raise UsageError(f"{instance.instance_id}: unknown log_parser {parser!r}")
    files = tuple(re.findall(r"^diff --git a/.* b/(.*)$", instance.test_patch, re.M))
    directives = tuple(f for f in files if not f.endswith(NON_TEST_EXTS))
    if parser == "django":
        directives = tuple(_module(d, instance.repo == "django/django") for d in directives)
    notes: tuple[str, ...] = ()
    if instance.repo in _OTHER_PARSER and "log_parser" not in instance.extra:
        notes = (f"read with the pytest parser; swebench uses parse_log_{_OTHER_PARSER[instance.repo]} "
                 "for this repository (not ported): verdicts may differ",)  # fmt: skip
    return RunSpec(test_cmd, parser, directives, patch_files(instance.test_patch), notes)


def _module(path: str, strip_tests: bool) -> str:
    path = path.removesuffix(".py")
    if strip_tests:
        path = path.removeprefix("tests/")
    return path.replace("/", ".")


def protected_paths(candidate_files: tuple[str, ...], spec: RunSpec) -> tuple[str, ...]:
    """The files of a candidate patch whose changes never count: the test patch's files
    and any ``conftest.py``. (Pytest configuration inside shared files is judged by
    content, see ``pytest_config_changed``.)"""
    return tuple(
        f for f in candidate_files if f in spec.test_files or f.rsplit("/", 1)[-1] == "conftest.py"
    )


_INI_SECTION = re.compile(r"^\[(pytest|tool:pytest)\]\s*$")
_TOML_SECTION = re.compile(r"^\[tool\.pytest(\.[\w.-]+)?\]\s*$")


def pytest_section(text: str, name: str) -> str:
    """The lines of ``text`` (a file called ``name``) that configure pytest."""
    if name == "pytest.ini" or name == ".pytest.ini":
        return text
    section = _TOML_SECTION if name == "pyproject.toml" else _INI_SECTION
    keep, inside = [], False
    for line in text.splitlines():
        if line.startswith("["):
            inside = bool(section.match(line.strip()))
        if inside:
            keep.append(line.rstrip())
    return "\n".join(keep)
