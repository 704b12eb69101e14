"""swebench's per-version specs decide an instance's command, parser and environment:
the shipped copy, and how each spec field is followed (or, where it needs the harness's
container, listed as not followed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.gym._specs import SHIPPED, official_specs, render
from tidegate.gym.swe_env import env_spec
from tidegate.gym.swe_instances import Instance
from tidegate.gym.swe_specs import TEST_SYMPY, official_spec, spec_for


def _instance(repo: str, version: str, **extra: object) -> Instance:
    patch = "diff --git a/tests/test_x.py b/tests/test_x.py\n"
    return Instance("i", repo, "abc1234", "", "", patch, (), (), {"version": version, **extra})


def test_sympy_follows_its_spec() -> None:
    instance = _instance("sympy/sympy", "1.11")
    spec = spec_for(instance)
    assert (spec.test_cmd, spec.log_parser) == (TEST_SYMPY, "sympy")
    env = env_spec(instance, spec)
    assert env.python == "3.9"
    assert env.packages == ("mpmath", "flake8", "mpmath==1.3.0", "flake8-comprehensions")
    assert env.install == "python -m pip install -e ."
    assert env.requirements == () and env.notes == ()


def test_django_installs_its_requirements_file_and_an_instance_may_override() -> None:
    instance = _instance("django/django", "4.2")
    env = env_spec(instance, spec_for(instance))
    assert env.requirements == ("tests/requirements/py3.txt",) and env.packages == ()
    mine = _instance("django/django", "4.2", environment={"python": "3.11", "packages": ["x"]})
    env = env_spec(mine, spec_for(mine))
    assert (env.python, env.packages, env.requirements) == ("3.11", ("x",), ())
    assert env.install == "python -m pip install -e ."  # the part it does not name: the spec's


def test_steps_needing_the_container_are_listed_not_run() -> None:
    old = _instance("django/django", "3.0")
    spec = spec_for(old)
    assert spec.exports == ("export LANG=en_US.UTF-8", "export LANGUAGE=en_US:en",
                            "export LC_ALL=en_US.UTF-8")  # fmt: skip
    assert any("locale-gen" in note for note in spec.notes)
    ancient = _instance("django/django", "2.2")
    env = env_spec(ancient, spec_for(ancient))
    assert any("apt-get" in note for note in env.notes) and env.pre_install == ()
    astropy = official_spec("astropy/astropy", "5.1")
    env = env_spec(
        _instance("astropy/astropy", "5.1"), spec_for(_instance("astropy/astropy", "5.1"))
    )
    assert env.pre_install == tuple(astropy.get("pre_install", ()))  # its sed edits do run
    assert spec_for(_instance("astropy/astropy", "5.1")).log_parser == "pytest_v2"


def test_without_a_spec_the_repository_default() -> None:
    unknown = _instance("pallets/flask", "99.0")
    spec = spec_for(unknown)
    assert (spec.test_cmd, spec.log_parser) == ("pytest -rA", "pytest")
    assert env_spec(unknown, spec).packages == ("pytest",)


@pytest.mark.slow
def test_the_shipped_specs_are_swebenchs(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.getbasetemp().parent / "tidegate-swebench-wheel"
    shipped = [json.loads(line) for line in SHIPPED.read_text().splitlines()]
    assert SHIPPED.read_text() == render(official_specs(cache)), (
        "run tests/integration/gym/_specs.py"
    )
    assert {row["repo"] for row in shipped} >= {"django/django", "sympy/sympy"}
    assert Path(SHIPPED).stat().st_size < 100_000
