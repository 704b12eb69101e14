"""tidegate's own environment holds model keys, cloud credentials and tokens; a command it
runs gets none of them, however the name is spelled (upper, lower or mixed case) and
whichever door it comes through: a family every command gets (``GIT_*``, ``PYTHON*``,
``LC_*``), the user's configured pass-through, or an environment a caller built. Checked
from outside, on a real ``env`` process, with the values planted in tidegate's own
environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tidegate.exec.environment import command_environment, never_passed, without_secrets
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command

SECRET_NAMES = [
    # *_KEY, *KEY (any case)
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_KEY", "my_key", "My_Key", "STRIPE_KEY",
    "signingkey", "API_KEY_ID", "apiKeyId",
    # *_TOKEN
    "GITHUB_TOKEN", "gh_token", "Gh_Token", "NPM_TOKEN", "TOKEN", "token", "HF_TOKEN",
    "GITHUB_TOKEN_FILE", "githubTokenFile",
    # *SECRET*
    "APP_SECRET", "app_secret", "SECRET_SAUCE", "TOPSECRET", "Client_Secret",
    # *PASSWORD* and its spellings
    "DB_PASSWORD", "db_password", "dbPassword", "PASSWORD", "PGPASSWORD", "MYSQL_PWD",
    "PASSWORD_FILE", "MY_PASSWORD_HASH", "REDIS_PASS", "SMTP_PASSWD", "GPG_PASSPHRASE",
    # credential families
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "aws_profile",
    "AZURE_CLIENT_ID", "azure_tenant", "GCP_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK", "ssh_auth_sock", "CREDENTIALS_FILE",
    # secret-shaped names inside the families every command gets
    "GIT_TOKEN", "GIT_PASSWORD", "git_password", "GIT_SSL_KEY", "GIT_HTTP_TOKEN",
    "PYTHON_TOKEN", "PYTHONPASSWORD", "PYTHON_KEYRING_SECRET", "LC_SECRET", "LC_API_KEY",
]  # fmt: skip
PLAIN_NAMES = [
    "PATH", "HOME", "LANG", "TERM", "TZ", "PYTEST_ADDOPTS", "GIT_AUTHOR_NAME", "PYTHONPATH",
    "LC_ALL", "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "KEYBOARD_LAYOUT",
]  # fmt: skip
"""Names that merely look close: a command needs them, and they carry no secret."""


def marker(name: str) -> str:
    return f"planted-{name.lower().replace('_', '-')}-value"


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_each_secret_shape_is_never_passed(name: str) -> None:
    assert never_passed(name)
    env = {name: marker(name), "PATH": "/usr/bin"}
    assert command_environment(env, passthrough=[name]) == {"PATH": "/usr/bin"}
    assert without_secrets(env) == {"PATH": "/usr/bin"}


@pytest.mark.parametrize("name", ["SECRETSAUCE", "MYSECRETVALUE", "PASSWORDHASH", "db_passwd_file"])
def test_secret_anywhere_in_the_name_as_documented(name: str) -> None:
    assert never_passed(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names_still_pass(name: str) -> None:
    assert not never_passed(name)
    assert command_environment({name: "v"}, passthrough=[name]) == {name: "v"}


def test_a_real_command_sees_none_of_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in SECRET_NAMES:
        monkeypatch.setenv(name, marker(name))
    monkeypatch.setenv("MY_TOOL_OPTS", "kept")
    printenv = [sys.executable, "-c", "import os; print(repr(sorted(os.environ.items())))"]
    seen = []
    # by default; with every name configured as pass-through; with an environment built
    # by a caller from tidegate's own
    for kwargs in (
        {},
        {"passthrough": (*SECRET_NAMES, "MY_TOOL_OPTS")},
        {"env": dict(os.environ)},
    ):
        res = run_command(
            printenv,
            tmp_path,
            30,
            tmp_path / "spill",
            clearance=Clearance.user(),
            **kwargs,  # type: ignore[arg-type]
        )
        assert res.exit_code == 0, res.stderr_tail
        seen.append(res.stdout_tail)
    for out in seen:
        for name in SECRET_NAMES:
            assert marker(name) not in out, name
    assert "kept" in seen[1] and "kept" in seen[2] and "kept" not in seen[0]
