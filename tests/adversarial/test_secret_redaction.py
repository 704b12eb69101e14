"""Attack: a secret reaches the store, a report or the screen in a form the redactor does
not know. Every format stands on its own here (no ``TOKEN=`` in front doing the work),
glued to a word, inside JSON and inside a URL; ordinary text must come through unchanged.

Each format is its own test case, so dropping one pattern from ``tidegate.text.sanitize`` fails
the cases of that format only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.text.sanitize import REDACTED, redact, redact_value, sanitize

# Realistic shapes (made up, right length and alphabet), one per format.
SECRETS = {
    "openai": "sk-" + "T3BlbkFJ" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4",
    "openai_project": "sk-proj-" + "Xy9_kQ2-Lm4nP8rS1tUvW3xYz5AbCdEf6GhIjK7lMnOp8QrStUv9WxYz0",
    "anthropic": "sk-ant-api03-" + "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7Aa6_Bb5-Cc4Dd3Ee2Ff1Gg0Hh",
    "stripe_live": "sk_live_" + "51H8xYzAbCdEfGhIjKlMnOpQrStUvWx",
    "stripe_restricted": "rk_live_" + "51H8xYzAbCdEfGhIjKlMnOpQrStUvWx",
    "stripe_webhook": "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "github_classic": "ghp_" + "R2d2C3poL8kJ7hG6fD5sA4qW3eR2tY1uI0oP",
    "github_oauth": "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github_server": "ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github_user": "ghu_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github_refresh": "ghr_"
    + "1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498",
    "github_pat": "github_pat_"
    + "11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXy",
    "gitlab": "glpat-" + "xK9mP2qR7sT4vW1yZ3aB",
    "slack_bot": "xoxb-" + "2048576301-4096123587234-Gh7Jk9Lm2Np4Qr6St8Vw0Xy",
    "slack_user": "xoxp-"
    + "2048576301-4096123587234-4096123587235-8f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c",
    "slack_app": "xapp-" + "1-A03BCDEFGHI-4096123587234-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
    "aws_access_key_id": "AKIA" + "QX4RZ7T2M9VB3KLP",
    "aws_session_key_id": "ASIA" + "Y6H3J9K2L5M8N1P4",
    "google_api_key": "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
}
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDn3pdh5l6vX8kQ2b9YQq0MNsWFeRyl6Cz8e3bRzTQyOAAAAJjJ8m5lyfJu\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def _gone(secret: str, text: str) -> None:
    out = redact(text)
    assert secret not in out, out
    # No recognisable remainder either: the longest leftover run of the secret is short.
    assert not any(secret[i : i + 12] in out for i in range(0, len(secret) - 12)), out
    assert REDACTED in out


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_format_alone(name: str) -> None:
    _gone(SECRETS[name], SECRETS[name])


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_format_in_prose(name: str) -> None:
    _gone(SECRETS[name], f"the deploy failed with {SECRETS[name]} (retrying)")


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_format_inside_json(name: str) -> None:
    doc = json.dumps({"note": "cfg", "value": SECRETS[name], "n": 3})
    _gone(SECRETS[name], doc)
    # Structured data under an innocent key is redacted too.
    assert SECRETS[name] not in json.dumps(redact_value({"value": SECRETS[name]}))


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_format_inside_url_query(name: str) -> None:
    _gone(SECRETS[name], f"GET https://api.example.com/v1/items?limit=5&k={SECRETS[name]} 200")


@pytest.mark.parametrize(
    "name", ["openai", "openai_project", "anthropic", "github_pat", "github_classic", "gitlab"]
)
def test_format_glued_to_a_word(name: str) -> None:
    _gone(SECRETS[name], f"mykey{SECRETS[name]}")


def test_aws_key_id_glued_to_lowercase_word() -> None:
    _gone(SECRETS["aws_access_key_id"], "accesskeyid" + SECRETS["aws_access_key_id"])


def test_pem_private_key_block() -> None:
    out = redact(f"cat id_ed25519:\n{PEM}\ndone")
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU" not in out and "QyNTUxOQ" not in out
    assert out.startswith("cat id_ed25519:\n") and out.endswith("\ndone")


def test_pem_block_cut_off_by_a_tail_limit() -> None:
    cut = PEM.rsplit("\n", 1)[0]  # the output ended before END
    assert "QyNTUxOQ" not in redact(cut)


def test_pem_rsa_block_inside_json() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----\n"
    assert "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo" not in redact(json.dumps({"key": block}))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgres://app:Tr0ub4dor&3x@db.internal:5432/app", "Tr0ub4dor&3x"),
        ("git clone https://deploy:9fK2mQ7xL1@git.example.com/r.git", "9fK2mQ7xL1"),
        ('{"url": "redis://:hunter2hunter2@cache:6379/0"}', "hunter2hunter2"),
    ],
)
def test_password_in_url(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and REDACTED in out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DB_PASS=Kq8zLm2pW", "Kq8zLm2pW"),
        ("export SMTP_PASSWORD='correct horse battery'", "correct horse battery"),
        ("CLIENT_SECRET: 7f3a9c2e1b", "7f3a9c2e1b"),
        ("SLACK_BOT_TOKEN=abcd1234efgh", "abcd1234efgh"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3aB7", "wJalrXUtnFEMI/K7MDENG"),
        ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3aB7"}', "wJalrXUtnFEMI/K7MDENG"),
        ('{"dbPassword": "pa55w0rd!"}', "pa55w0rd!"),
        ("mysql --password Zq9x8c7v6 -u root", "Zq9x8c7v6"),
        ("run --api-key=Zq9x8c7v6b5n", "Zq9x8c7v6b5n"),
        ('echo "{\\"api_key\\": \\"Zq9x8c7v6b5n\\"}"', "Zq9x8c7v6b5n"),
        ("DATABASEPASSWORD=Zq9x8c7v6b5n", "Zq9x8c7v6b5n"),
    ],
)
def test_secret_named_assignment(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and REDACTED in out, out


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "curl -H 'authorization: bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0' https://x",
    ],
)
def test_bearer_token(text: str) -> None:
    assert "9f8e7d6c5b4a39281706f5e4d3c2b1a0" not in redact(text)


def test_basic_authorization_header() -> None:
    assert "YWxhZGRpbjpvcGVuc2VzYW1l" not in redact("Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l")


NEGATIVE = [
    "Refactor the token bucket so the rate limiter passes its tests.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "run 123e4567-e89b-12d3-a456-426614174000 finished",
    '{"max_tokens": 4096, "prompt_tokens": 812, "completion_tokens": 77}',
    "max_tokens=4096 temperature=0.2",
    "PASS: tests/test_parser.py::test_empty",
    "PWD=/home/dev/src/project",
    "the task-management-system-for-everyone branch",
    "see https://docs.python.org/3/library/re.html#re.sub for details",
    "tokenizer = load_tokenizer('gpt2')",
    "keys: 12; passes: 3; secrets module imported",
    'error: "api_key" must be set (got null)',
    "AKIAshort is not a key, nor is ASIA-Pacific",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    once = redact(f"OPENAI_API_KEY={SECRETS['openai']} DB_PASS=Kq8zLm2pW")
    assert redact(once) == once


def test_sanitize_redacts_and_escapes() -> None:
    out = sanitize(f"\x1b]52;c;{SECRETS['github_classic']}\x07")
    assert "\x1b" not in out and "\x07" not in out and SECRETS["github_classic"] not in out


# -- what the tools persist -----------------------------------------------------------------


def _bytes_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_artifact_content_is_stored_redacted(committed_repo: Repo, tmp_path: Path) -> None:
    store = tmp_path / "state" / "artifacts"
    key = SECRETS["github_pat"]
    with executor(committed_repo.root, artifact_dir=store, activate_all=True) as ex:
        made = ex.execute(call("artifact_create", name="notes.md", content=f"push with {key}\n"))
        assert made.ok, made
        art_id = made.output["artifact"]["artifact_id"]  # type: ignore[index]
        read = ex.execute(call("artifact_read", artifact_id=art_id))
    assert read.ok, read  # the stored hash matches the stored (redacted) content
    assert key.encode() not in _bytes_under(store)
    assert key not in json.dumps(read.to_json()) and REDACTED in json.dumps(read.to_json())


def test_task_checkpoint_is_stored_redacted(committed_repo: Repo, tmp_path: Path) -> None:
    state = tmp_path / "state" / "task.json"
    key = SECRETS["aws_access_key_id"]
    with executor(committed_repo.root, task_state_path=state) as ex:
        done = ex.execute(
            call(
                "task_checkpoint",
                summary=f"found {key} in the logs",
                items=[{"id": "i1", "text": f"rotate DB_PASS=Kq8zLm2pW and {key}"}],
                next_step=f"revoke {SECRETS['slack_bot']}",
            )
        )
    assert done.ok, done
    stored = state.read_bytes()
    for secret in (key, "Kq8zLm2pW", SECRETS["slack_bot"]):
        assert secret.encode() not in stored
    assert json.loads(stored)["sequence"] == 1


def test_ledger_evidence_quotes_command_output_sanitised(tmp_path: Path) -> None:
    """``ledger record --run``: the attested output tail written into the task files."""
    from tests.unit.ledger.helpers import new_task, state
    from tidegate import ledger

    task = new_task(tmp_path)
    first = state(task).items[0].id
    ledger.claim(task, first, "tester")
    key = SECRETS["gitlab"]
    command = f"printf 'token {key}\\033]52;c;eA==\\007\\n'"
    ledger.record(task, first, [], run=command, cwd=tmp_path)
    written = b"".join(p.read_bytes() for p in task.rglob("*") if p.is_file())
    assert key.encode() not in written
    assert b"\x1b" not in written and b"\x07" not in written
    assert b"\\x1b]52;c;" in written  # quoted, visibly
