"""VERIFY must test the shadow's code even when the project is installed editable.

The venvs here are real interpreters (``python -m venv --without-pip``); the editable
installs are written the way installers write them: a ``.pth`` path entry (legacy
``setup.py develop`` / static editable) or a ``__editable__`` finder module that maps the
package to its directory in the main work tree (setuptools' finder-based editables).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo

FINDER = """\
import importlib.util, sys
MAPPING = {{'pkg': {path!r}}}
class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in MAPPING:
            return importlib.util.spec_from_file_location(
                name, MAPPING[name] + '/__init__.py', submodule_search_locations=[MAPPING[name]])
        return None
def install():
    sys.meta_path.append(_Finder)
"""


def _venv(tmp_path: Path) -> tuple[Path, Path]:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    return venv / "bin" / "python", site


def _project(repo: Repo) -> None:
    repo.write("src/pkg/__init__.py", "VALUE = 1\n")
    repo.commit_all()


VERIFY = '{py} -c "import pkg, sys; sys.exit(0 if pkg.VALUE == {want} else 1)"'


@pytest.mark.parametrize("style", ["pth", "finder"])
def test_verify_imports_the_shadow_not_the_editable_main_tree(
    repo: Repo, tmp_path: Path, style: str
) -> None:
    _project(repo)
    python, site = _venv(tmp_path)
    src = repo.root / "src"
    if style == "pth":
        (site / "pkg-editable.pth").write_text(f"{src}\n")
    else:
        (site / "__editable___pkg_0_1_finder.py").write_text(FINDER.format(path=str(src / "pkg")))
        (site / "__editable__.pkg-0.1.pth").write_text(
            "import __editable___pkg_0_1_finder; __editable___pkg_0_1_finder.install()\n"
        )
    # The main tree really is what this interpreter imports.
    out = subprocess.run(
        [str(python), "-c", "import pkg; print(pkg.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == str(src / "pkg" / "__init__.py")

    edit = "edit-file: src/pkg/__init__.py\nreplace: VALUE = 1\nwith: VALUE = {}\n"
    good = repo.run(edit.format(2), verify=VERIFY.format(py=python, want=2))
    assert good.status == "succeeded", good.message
    assert any("editable install" in note for note in good.notes)
    assert repo.read("src/pkg/__init__.py") == "VALUE = 2\n"

    # And a change that breaks the check fails, though the main tree would pass it.
    bad = repo.run(
        edit.format(3).replace("VALUE = 1", "VALUE = 2"),
        verify=VERIFY.format(py=python, want=2),
        max_attempts=1,
    )
    assert bad.status == "failed"
    assert bad.failure_phase == "VERIFY"
    assert repo.read("src/pkg/__init__.py") == "VALUE = 2\n"


def test_no_note_without_an_editable_install(committed_repo: Repo) -> None:
    report = committed_repo.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify=f'{sys.executable} -c "import calc; assert calc.add(2, 3) == 5"',
    )
    assert report.status == "succeeded", report.message
    assert not any("editable" in note for note in report.notes)


def test_relative_command_in_an_ignored_dir_gets_a_hint(committed_repo: Repo) -> None:
    committed_repo.write("build/run-checks", "#!/bin/sh\nexit 0\n", mode=0o755)
    report = committed_repo.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify="build/run-checks",
    )
    assert report.status == "failed"
    assert report.error_class == "DEPENDENCY_ERROR"
    assert report.attempts == 1
    assert str(committed_repo.root / "build/run-checks") in report.message


def test_relative_interpreter_in_a_shared_venv_is_probed(repo: Repo) -> None:
    """``.venv/bin/python`` (ignored, shared into the shadow) with an editable install of
    the main tree: the shadow's code must still be what VERIFY imports."""
    _project(repo)
    repo.write(".gitignore", ".venv/\n")
    repo.commit_all()
    venv = repo.root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "pkg-editable.pth").write_text(f"{repo.root / 'src'}\n")
    edit = "edit-file: src/pkg/__init__.py\nreplace: VALUE = 1\nwith: VALUE = 2\n"
    report = repo.run(edit, verify=VERIFY.format(py=".venv/bin/python", want=2))
    assert report.status == "succeeded", report.message
    assert any("editable install" in note for note in report.notes)
    assert repo.read("src/pkg/__init__.py") == "VALUE = 2\n"
