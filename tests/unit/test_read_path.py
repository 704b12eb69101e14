"""The pieces of the read path that stand in for a library, each against the library.

``store.report_check``, ``store.evidence``, ``store.reading`` and ``store.locate`` avoid
importing pydantic, hashlib, hmac and pathlib; each stand-in is checked here against the
real thing on ordinary and hostile inputs, and the report's field table against the report
model, so a change to either side fails here rather than printing something different.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tidegate.disk.state_dir import user_state_dir
from tidegate.records.checked import Checked
from tidegate.records.report import FlowReport
from tidegate.store import evidence, reading
from tidegate.store.canonical import canonical_json
from tidegate.store.checkpoints import CheckpointKey
from tidegate.store.reading import Irregular
from tidegate.store.report_check import MODELS
from tidegate.store.report_check import checked_report as checked
from tidegate.store.schema import SCHEMA_VERSION


def _kind(annotation: Any) -> Any:
    """An annotation in ``MODELS``' notation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return ("L", args)
    if origin is list:
        return ("[]", _kind(args[0]))
    if origin is dict:
        return "json"
    if args and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return ("?", _kind(inner))
    if isinstance(annotation, type) and issubclass(annotation, Checked):
        return annotation.__name__
    return {str: "str", int: "int", float: "float", bool: "bool"}[annotation]


def _models(model: type[Checked], out: dict[str, Any]) -> dict[str, Any]:
    annotations = [(f.name, f.type) for f in msgspec.structs.fields(model)]
    out[model.__name__] = tuple((n, _kind(a)) for n, a in annotations)
    for _, annotation in annotations:
        for arg in [annotation, *typing.get_args(annotation)]:
            for inner in [arg, *typing.get_args(arg)]:
                if isinstance(inner, type) and issubclass(inner, Checked):
                    _models(inner, out)
    return out


def test_the_field_table_is_the_report_model() -> None:
    assert _models(FlowReport, {}) == MODELS


def test_the_schema_version_is_the_stores() -> None:
    assert reading.SCHEMA_VERSION == SCHEMA_VERSION


REPORT = FlowReport(
    status="failed",
    mode="patch",
    run_id="r1",
    repo="/w",
    attempts=1,
    max_attempts=1,
    fs_mode="read-write",
    planner="structured",
    changed_files=[
        {"path": "bad\udcff.py", "action": "create", "before_sha256": None, "after_sha256": "a"}
    ],  # type: ignore[list-item]
    duration_s=1.5,
)


def test_a_dumped_report_is_accepted_as_it_is() -> None:
    dumped = REPORT.model_dump(mode="json")
    assert checked(dumped) is dumped
    assert FlowReport.model_validate(dumped).model_dump(mode="json") == dumped


@pytest.mark.parametrize(
    "change",
    [
        {"duration_s": 1},
        {"attempts": 1.0},
        {"attempts": True},
        {"status": "weird"},
        {"message": "lone \udcff"},
        {"notes": [1]},
        {"duration_s": float("inf")},
    ],
)
def test_what_the_model_would_change_or_refuse_is_not_accepted(change: dict[str, Any]) -> None:
    with pytest.raises(Irregular):
        checked({**REPORT.model_dump(mode="json"), **change})


def test_reordered_missing_or_extra_fields_are_not_accepted() -> None:
    dumped = REPORT.model_dump(mode="json")
    for broken in (
        dict(reversed(list(dumped.items()))),
        {k: v for k, v in dumped.items() if k != "notes"},
        {**dumped, "extra": 1},
    ):
        with pytest.raises(Irregular):
            checked(broken)


def test_hmac_and_canonical_json_are_the_stores() -> None:
    key = CheckpointKey(bytes(range(32)))
    for data in (b"", b"{}", b"x" * 200, bytes(range(256))):
        assert evidence.hmac_sha256(bytes(range(32)), data) == key.sign(data)
    value = {"b": [1, "\u00e9", None, True], "a": {"z": "\udcff", "y": -3}}
    assert evidence.canonical(value) == canonical_json(value)
    for text in ('{"f": 1.5}', '{"f": [NaN]}', '{"f": -Infinity}', "1e3"):
        with pytest.raises(TypeError):
            evidence.integral_json(text)


@pytest.mark.parametrize("path", ["/tmp/a b/c%d", "/tmp/ünï/x", "/tmp/q?x#y&z=1", "/t/~_.-"])
def test_file_uris_are_pathlibs(path: str) -> None:
    assert reading._file_uri(path) == Path(path).as_uri()


@pytest.mark.parametrize(
    "env",
    [
        {"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"},
        {"XDG_STATE_HOME": "relative/state", "HOME": "/home/u/"},
        {"XDG_STATE_HOME": "", "HOME": "/home/u"},
        {"HOME": "/"},
        {"HOME": "relative"},
        {"XDG_STATE_HOME": "/x//y/", "HOME": "/h"},
    ],
)
def test_the_default_state_root_is_platformdirs(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs

    for name in ("XDG_STATE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert user_state_dir() == platformdirs.user_state_dir("tidegate")
