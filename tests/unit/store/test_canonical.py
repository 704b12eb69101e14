"""Canonical JSON and redaction: what makes checkpoint hashes reproducible and stored data
free of secrets and model reasoning."""

from __future__ import annotations

import json

import pytest

from tidegate.store.canonical import NotCanonical, canonical_json, value_digest
from tidegate.text.floats import decode_floats, encode_floats
from tidegate.text.sanitize import OMITTED_REASONING, REDACTED, redact_value


def test_keys_are_sorted_at_every_level_without_whitespace() -> None:
    value = {"b": {"z": 1, "a": [2, {"y": None, "x": True}]}, "a": "é"}
    assert canonical_json(value) == b'{"a":"\\u00e9","b":{"a":[2,{"x":true,"y":null}],"z":1}}'


def test_the_same_value_in_any_insertion_order_has_one_digest() -> None:
    forward = {str(i): i for i in range(50)}
    backward = {str(i): i for i in reversed(range(50))}
    assert value_digest(forward) == value_digest(backward)


def test_undecodable_file_names_survive_a_round_trip() -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    data = canonical_json({"path": name})
    assert data.isascii()
    assert json.loads(data)["path"] == name


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"duration": 1.5}, "$.duration"),
        ({"a": [1, 2.0]}, "$.a[1]"),
        ({1: "x"}, "key 1"),
        ({"blob": b"raw"}, "bytes"),
    ],
)
def test_values_that_are_not_canonical_are_refused(value: object, where: str) -> None:
    with pytest.raises(NotCanonical, match=where.replace("$", r"\$").replace("[", r"\[")):
        canonical_json(value)


def test_floats_can_be_kept_exactly_when_tagged() -> None:
    value = {"ms": 12.34, "nested": [0.1, 3]}
    tagged = encode_floats(value)
    assert decode_floats(json.loads(canonical_json(tagged))) == value


def test_redaction_walks_nested_values() -> None:
    value = {
        "note": "export OPENAI_API_KEY=sk-abcdefghijklmnopqrstu done",
        "nested": [{"url": "https://bob:hunter22@example.com/x"}],
        "api_key": "plain-looking-value",
        "db_password": "correct horse",
        "max_tokens": 4096,
        "token_count": 12,
        "reasoning": "I think the user wants ...",
        "thinking": {"steps": ["a", "b"]},
    }
    out = redact_value(value)
    text = json.dumps(out)
    for secret in ("sk-abcdefghijklmnopqrstu", "hunter22", "plain-looking-value", "correct"):
        assert secret not in text
    assert isinstance(out, dict)
    assert out["api_key"] == REDACTED
    assert out["max_tokens"] == 4096 and out["token_count"] == 12
    assert out["reasoning"] == OMITTED_REASONING and out["thinking"] == OMITTED_REASONING


def test_redaction_leaves_ordinary_text_alone() -> None:
    value = {"detail": "~312 tokens of feedback; the token expired", "paths": ["a/token.py"]}
    assert redact_value(value) == value
