"""``Git.core_settings``: the settings the candidate build and the apply-back read, once per
run, parsed as git parses them."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tidegate.git.settings import git_bool
from tidegate.workspace.repo import discover


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, True), ("true", True), ("YES", True), (" on ", True), ("1", True), ("-2", True),
     ("false", False), ("no", False), ("off", False), ("0", False), ("", False),
     ("maybe", False)],
)  # fmt: skip
def test_booleans_read_as_git_config_type_bool(value: str | None, expected: bool) -> None:
    assert git_bool(value) is expected


def test_every_value_in_order_and_a_bare_key(committed_repo: Repo) -> None:
    config = committed_repo.root / ".git" / "config"
    config.write_text(
        config.read_text()
        + "[core]\n\tignorecase\n\tautocrlf = input\n[core]\n\tautocrlf = true\n\teol = lf\n"
    )
    git = discover(committed_repo.root).git
    settings = git.core_settings()
    assert settings["core.ignorecase"] == [None]
    assert settings["core.autocrlf"] == ["input", "true"]
    assert settings["core.eol"] == ["lf"]
    # read once: what a command writes into the config afterwards does not count
    committed_repo.git("config", "core.eol", "crlf")
    assert git.core_settings()["core.eol"] == ["lf"]
