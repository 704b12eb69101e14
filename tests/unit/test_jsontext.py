"""``parse_json``: JSON nested deeper than ``MAX_DEPTH`` is malformed JSON (a
``JSONDecodeError`` naming where), decided before parsing, so nothing that walks the value
afterwards (the sanitiser, ``json.dumps``, a migration) meets a depth Python cannot take."""

from __future__ import annotations

import json

import pytest

from tidegate.text.jsonparse import MAX_DEPTH, JSONTooDeep, parse_json
from tidegate.text.sanitize import redact_value


def nested(depth: int, inner: str = "0") -> str:
    return "[" * depth + inner + "]" * depth


def test_the_bound_is_exact() -> None:
    assert parse_json(nested(MAX_DEPTH)) is not None
    with pytest.raises(JSONTooDeep) as caught:
        parse_json(nested(MAX_DEPTH + 1))
    assert isinstance(caught.value, json.JSONDecodeError)
    assert caught.value.pos == MAX_DEPTH  # the bracket that went one level too deep
    assert str(caught.value).startswith(f"nested deeper than {MAX_DEPTH} levels: line 1")


def test_a_value_under_pythons_own_limit_is_refused_before_it_is_walked() -> None:
    """900 levels parse with ``json`` alone, and then break the next recursive walk."""
    text = nested(900, '"sk-proj-AbCdEf1234567890XyZ"')
    with pytest.raises(RecursionError):
        redact_value(json.loads(text))
    with pytest.raises(JSONTooDeep):
        parse_json(text)


def test_brackets_in_strings_and_objects_count_as_they_should() -> None:
    text = json.dumps({"a": "[" * 1000 + '\\"{' * 500, "b": [{"c": [1]}] * 300})
    assert parse_json(text)["b"][0] == {"c": [1]}
    objects = '{"k": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(JSONTooDeep):
        parse_json(objects)


def test_bytes_and_options_are_passed_on() -> None:
    assert parse_json(b'{"x": 1.5}', parse_float=str) == {"x": "1.5"}
    with pytest.raises(ValueError):
        parse_json(b"\xff[]")
