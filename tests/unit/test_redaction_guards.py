"""Redaction runs each pattern only on text holding one of that pattern's substrings
(``tidegate.text.sanitize``, to spare start-up the compiling of patterns it never needs). The
substrings must be necessary: here the guarded ``redact`` is compared with every pattern
run on every text, on the adversarial corpus and on many generated texts built from the
patterns' own pieces, case variants and look-alike characters included."""

from __future__ import annotations

import random
import re

import pytest

from tests.adversarial.test_secret_redaction import SECRETS
from tidegate.text import sanitize
from tidegate.text.sanitize import REDACTED, redact


def _unguarded(text: str) -> str:
    """``redact`` as it was: every pattern on every text the trigger lets through."""
    if not sanitize.TRIGGER.search(text):
        return text
    for name, (source, flags, _) in sanitize._SHAPE_SOURCES.items():
        text = re.sub(
            source, sanitize._url_user if name == "url_password" else REDACTED, text, flags=flags
        )
    text = re.sub(sanitize._SK, sanitize._sk, text)
    text = re.sub(sanitize._ASSIGNMENT, sanitize._named, text)
    return re.sub(sanitize._FLAG, sanitize._named, text)


PIECES = [
    *SECRETS.values(), "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "sk_live_", "rk_test_", "whsec_", "github_pat_", "ghp_", "gho_", "glpat-", "xoxb-", "xapp-1-",
    "AKIA", "AIza", "eyJ", "Bearer ", "BEARER ", "bearer\t", "Authorization: Basic ",
    "author\u0131zation: basic ", "beare\u017f ", "https://", "user:", "pw@", "@host", "sk-", "sk-ant-",
    "DB_PASS=", "--password ", "apiKey: ", "\"token\": \"", "Secret=", "credentials=", "PW=",
    "dbPwd=", "x" * 20, "A1b2C3d4E5f6G7h8I9j0kLmN", "0123456789abcdefABCDEF", " ", "\n", "=",
    ":", "\"", "'", "-", "_", ".", "/", "passed", "keys", "tokens", "é", "\u017f", "\u0131", "\u212a",
]  # fmt: skip


def test_the_guards_never_skip_a_pattern_that_would_redact() -> None:
    for secret in SECRETS.values():
        for text in (secret, f"x {secret} y", f'{{"k": "{secret}"}}', f"a{secret}"):
            assert redact(text) == _unguarded(text), text
    rng = random.Random(20261202)
    for _ in range(6000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))
        assert redact(text) == _unguarded(text), repr(text)


@pytest.mark.parametrize("name", ["DB_PW", "db-pw", "SMTP_PW", "--admin-pw"])
def test_a_name_ending_in_pw_is_redacted_through_the_trigger_search(name: str) -> None:
    """``secret_name`` treats ``pw`` as a secret tail; the trigger search that runs first
    must let such text through to the assignment pattern."""
    from tidegate.text.sanitize import redact

    sep = " " if name.startswith("--") else "="
    shown = redact(f"{name}{sep}hunter2-value")
    assert "hunter2-value" not in shown, shown
