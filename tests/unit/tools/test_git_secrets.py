"""git.exec's exclusion pathspecs, judged by git itself: over a real index holding many
names, ``git ls-files -- <exclusions>`` leaves out exactly what ``SecretFiles`` withholds
(and the templates a pathspec cannot re-include), with and without allowances."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tidegate.tools.git_secrets import exclusions
from tidegate.workspace.secret_files import NOT_SECRET, SecretFiles

NAMES = [
    ".env", "a.env", "x.y.env", ".env.local", ".env.locale", ".env.loca", ".env.lokal",
    ".env.", ".env.l", ".env.test", ".env.example", ".envrc", "env", "calc.py",
    "README.md", "id_rsa", "id_rsa.pub", "id_rsa_old", "prod.pem", "dev.key", ".npmrc",
    "npmrc", "credentials", "credentials.json", "my-credentials.json", "credentials.md",
    "secrets.yml", "terraform.tfstate.backup", "x.tfvars", "[x].env", "a?b.env",
    "sub/.env", "sub/deep/.env.local", "sub/deep/.env.test", "sub/prod.pem", "sub/ok.txt",
]  # fmt: skip


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in NAMES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return root


def _listed(root: Path, pathspecs: tuple[str, ...]) -> set[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--", *pathspecs],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(filter(None, out.split("\0")))


def _template(name: str) -> bool:
    from fnmatch import fnmatchcase

    return any(fnmatchcase(name.rsplit("/", 1)[-1], p) for p in NOT_SECRET)


@pytest.mark.parametrize(
    "allowed",
    [(), (".env",), (".env", ".env.local"), (".env.local", ".env.locale", "a.env"), ("*.pem",)],
)
def test_the_exclusions_leave_out_exactly_the_withheld_names(
    index: Path, allowed: tuple[str, ...]
) -> None:
    secrets = SecretFiles(allowed)
    left = _listed(index, exclusions(secrets))
    for name in NAMES:
        if secrets.withheld(name):
            assert name not in left, (allowed, name)
        elif not _template(name):  # a template may be left out with its pattern
            assert name in left, (allowed, name)
    assert "calc.py" in left and "sub/ok.txt" in left
    for name in allowed:
        if "*" not in name:
            assert name in left, name


def test_a_glob_allowance_that_is_a_pattern_drops_it_and_star_drops_all() -> None:
    assert not any("*.pem" in p for p in exclusions(SecretFiles(("*.pem",))))
    assert exclusions(SecretFiles(("*",))) == ()
    assert any("*.pem" in p for p in exclusions(SecretFiles(("prod.pem", "config/x.pem"))))
