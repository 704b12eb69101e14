"""What the official harness runs for an instance: the test command, its log parser, the
test directives taken from the test patch, and the files a candidate may not change.

The per-version specs are the ``swebench`` package's (``MAP_REPO_VERSION_TO_SPECS_PY`` and
``MAP_REPO_TO_REQS_PATHS`` as 4.1.0 last shipped them; 5.x moved them into each task's
``eval.sh``), kept in ``swe_data/specs.jsonl``: per (repository, version) the Python, the
packages, the pre-install and install steps and the test command. Without a spec, the
repository's command: sympy's ``bin/test -C --verbose``, Django's ``tests/runtests.py
--verbosity 2 --settings=test_sqlite --parallel 1``, ``pytest -rA`` elsewhere. The parser
is swebench's ``MAP_REPO_TO_PARSER_PY``'s. An instance may name its own (tidegate's
extension of the format, for repositories no spec covers): ``test_cmd`` and ``log_parser``.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

import msgspec

from tidegate.errors import UsageError
from tidegate.gym.swe_grade import PARSERS
from tidegate.gym.swe_instances import Instance

TEST_PYTEST = "pytest -rA"
TEST_DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
TEST_SYMPY = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"

_PARSER_BY_REPO = {
    "django/django": "django", "sympy/sympy": "sympy",
    "psf/requests": "pytest_options", "pydicom/pydicom": "pytest_options",
    "pylint-dev/pylint": "pytest_options", "astropy/astropy": "pytest_v2",
    "scikit-learn/scikit-learn": "pytest_v2", "sphinx-doc/sphinx": "pytest_v2",
    "matplotlib/matplotlib": "matplotlib", "mwaskom/seaborn": "seaborn",
}  # fmt: skip
"""swebench's parser per repository where it is not ``parse_log_pytest``."""
_TEST_BY_REPO = {"django/django": TEST_DJANGO, "sympy/sympy": TEST_SYMPY}
PYTEST_PARSERS = frozenset({"pytest", "pytest_options", "pytest_v2", "matplotlib", "seaborn"})
"""Parsers that read pytest's output: the run loads the module-origin plugin."""


@functools.cache
def _specs() -> dict[str, dict[str, Any]]:
    text = resources.files("tidegate.gym").joinpath("swe_data/specs.jsonl").read_text()
    return {row["repo"]: row for row in map(json.loads, text.splitlines())}


def official_spec(repo: str, version: object) -> dict[str, Any]:
    """swebench's spec for (``repo``, ``version``), with the repository's requirements
    files under ``requirements_paths``; empty when it names none."""
    row = _specs().get(repo)
    if row is None or version is None or str(version) not in row["versions"]:
        return {}
    return {**row["versions"][str(version)], "requirements_paths": row["requirements_paths"]}


NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml",
                 ".yaml", ".toml")  # fmt: skip
"""swebench's ``NON_TEST_EXTS``: files of a test patch that are not handed to the runner."""

PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
"""Where pytest reads its configuration; a candidate's change to the pytest part of any
of them is undone before grading."""


class RunSpec(msgspec.Struct, frozen=True):
    """How one instance's tests run and are read."""

    test_cmd: str
    log_parser: str
    directives: tuple[str, ...]
    test_files: tuple[str, ...]
    notes: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    """The spec's ``eval_commands`` that set variables (``export X=Y``), run before the tests."""

    @property
    def runs_pytest(self) -> bool:
        return self.log_parser in PYTEST_PARSERS


def patch_files(patch: str) -> tuple[str, ...]:
    """The files a patch touches, both sides (``diff --git a/X b/Y``), in order."""
    found: list[str] = []
    for a, b in re.findall(r"^diff --git a/(\S+) b/(\S+)$", patch, re.M):
        found += [a, b]
    return tuple(dict.fromkeys(found))


def spec_for(instance: Instance) -> RunSpec:
    official = official_spec(instance.repo, instance.extra.get("version"))
    test_cmd = official.get("test_cmd") or _TEST_BY_REPO.get(instance.repo, TEST_PYTEST)
    test_cmd = str(instance.extra.get("test_cmd", test_cmd))
    parser = str(instance.extra.get("log_parser", _PARSER_BY_REPO.get(instance.repo, "pytest")))
    if parser not in PARSERS:
        raise UsageError(f"{instance.instance_id}: unknown log_parser {parser!r}")
    files = tuple(re.findall(r"^diff --git a/.* b/(.*)$", instance.test_patch, re.M))
    directives = tuple(f for f in files if not f.endswith(NON_TEST_EXTS))
    if parser == "django":
        directives = tuple(_module(d, instance.repo == "django/django") for d in directives)
    evals = [str(c) for c in official.get("eval_commands", [])]
    exports = tuple(c for c in evals if re.fullmatch(r"export \w+=\S*", c))
    notes = tuple(f"not run (needs the harness's container): eval command {c!r}"
                  for c in evals if c not in exports)  # fmt: skip
    return RunSpec(test_cmd, parser, directives, patch_files(instance.test_patch), notes, exports)


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
