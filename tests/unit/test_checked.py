"""Checked records: every field is checked against its annotation when a record is made,
by construction, from a mapping, from JSON or by a copy, and bad input names its field."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from msgspec import Meta, field

from tidegate.config.records import TidegateConfig
from tidegate.records.checked import Checked, CheckError, check
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


def _even(value: int) -> None:
    if value % 2:
        raise ValueError("must be even")


class Inner(Checked):
    name: str
    size: Annotated[int, Meta(ge=0)] = 0


class Outer(Checked):
    where: Path
    colour: Colour = Colour.RED
    kind: Literal["a", "b"] = "a"
    ratio: Annotated[float, Meta(gt=0, le=10)] = 1.0
    flag: bool = False
    tags: tuple[str, ...] = ()
    items: list[Inner] = field(default_factory=list)
    best: Inner | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    pairs: Annotated[int, check(_even)] = 2
    renamed: str = field(default="", name="other-name")


def test_values_are_converted_where_nothing_is_lost() -> None:
    record = Outer.model_validate(
        {
            "where": "/tmp/x",
            "colour": "blue",
            "ratio": 2,
            "tags": ["a", "b"],
            "items": [{"name": "one"}, {"name": "two", "size": 3}],
            "best": {"name": "b"},
            "other-name": "r",
        }
    )
    assert record.where == Path("/tmp/x")
    assert record.colour is Colour.BLUE
    assert record.ratio == 2.0 and type(record.ratio) is float
    assert record.tags == ("a", "b")
    assert record.items == [Inner(name="one"), Inner(name="two", size=3)]
    assert record.best == Inner(name="b")
    assert record.renamed == "r"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "where: missing"),
        ({"where": "/x", "colour": "green"}, "colour: must be one of 'red', 'blue'"),
        ({"where": "/x", "kind": "c"}, "kind: must be one of 'a', 'b'"),
        ({"where": "/x", "ratio": 0}, "ratio: must be greater than 0"),
        ({"where": "/x", "ratio": 11}, "ratio: must be at most 10"),
        ({"where": "/x", "ratio": float("nan")}, "ratio: must be a finite number"),
        ({"where": "/x", "ratio": "2"}, "ratio: must be a number, not str"),
        ({"where": "/x", "flag": 1}, "flag: must be true or false, not int"),
        ({"where": "/x", "pairs": True}, "pairs: must be an integer, not bool"),
        ({"where": "/x", "pairs": 2.0}, "pairs: must be an integer, not float"),
        ({"where": "/x", "pairs": 3}, "pairs: must be even"),
        ({"where": "/x", "tags": "ab"}, "tags: must be a list, not str"),
        ({"where": "/x", "tags": ["a", 1]}, "tags.1: must be a string, not int"),
        ({"where": "/x", "items": [{"name": "a"}, {"size": 1}]}, "items.1.name: missing"),
        ({"where": "/x", "items": [{"name": "a", "size": -1}]}, "items.0.size: must be at least 0"),
        ({"where": "/x", "best": {"name": "b", "colour": "red"}}, "best.colour: not a known field"),
        ({"where": "/x", "best": "b"}, "best: must be an object, not str"),
        ({"where": "/x", "renamed": "r"}, "renamed: not a known field"),
        ({"where": "/x", "other-name": 1}, "other-name: must be a string"),
        ({"where": 3}, "where: must be a path, not int"),
        ({"where": "/x", "extra": []}, "extra: must be a table, not list"),
    ],
)
def test_bad_input_names_its_field(data: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckError) as caught:
        Outer.model_validate(data)
    assert str(caught.value).startswith(message), str(caught.value)


class Numbered(Checked):
    value: Literal[1, 2]


def test_a_literal_is_matched_by_type_too() -> None:
    assert Numbered(value=1).value == 1
    for wrong in (True, 1.0, "1"):
        with pytest.raises(CheckError, match="value: must be"):
            Numbered(value=wrong)  # type: ignore[arg-type]


def test_construction_and_copies_are_checked_like_mappings() -> None:
    with pytest.raises(CheckError, match="size: must be at least 0"):
        Inner(name="a", size=-1)
    record = Inner(name="a")
    with pytest.raises(CheckError, match="size: must be an integer"):
        record.model_copy(update={"size": "3"})
    assert record.model_copy(update={"size": 4}) == Inner(name="a", size=4)
    with pytest.raises(AttributeError):
        record.size = 5  # type: ignore[misc]


def test_dumps_round_trip_through_json() -> None:
    record = Outer(
        where=Path("/w"),
        colour=Colour.BLUE,
        tags=("t",),
        items=[Inner(name="i")],
        renamed="r",
        extra={"k": [1, "é"]},
    )
    python = record.model_dump()
    assert python["where"] == Path("/w") and python["tags"] == ("t",)
    assert python["items"] == [{"name": "i", "size": 0}]
    dumped = record.model_dump(mode="json", by_alias=True)
    assert dumped["where"] == "/w" and dumped["colour"] == "blue" and dumped["tags"] == ["t"]
    assert dumped["other-name"] == "r" and "renamed" not in dumped
    assert Outer.model_validate(dumped) == record
    text = record.model_dump_json()
    assert "é" in text and ", " not in text
    assert json.loads(text)["renamed"] == "r"
    assert record.model_dump(exclude={"extra", "items"}).keys() == python.keys() - {
        "extra",
        "items",
    }


def test_json_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(CheckError, match="not valid JSON"):
        Inner.model_validate_json("{")
    with pytest.raises(CheckError, match="the document: must be an object, not list"):
        Inner.model_validate_json("[]")


def test_the_run_records_use_it() -> None:
    """The request, configuration and report: checked as they are made."""
    with pytest.raises(CheckError, match="max_attempts: must be at most 20"):
        RunRequest(repo=Path("."), objective="x", max_attempts=21)
    assert RunRequest(repo="r", objective="x").repo == Path("r")  # type: ignore[arg-type]
    config = TidegateConfig.model_validate({"validate": {"max_files": 3}})
    assert config.validate_.max_files == 3
    assert config.model_dump(mode="json", by_alias=True)["validate"]["max_files"] == 3
    with pytest.raises(CheckError, match=r"containment\.env: 'GITHUB_TOKEN' looks like a secret"):
        TidegateConfig.model_validate({"containment": {"env": ["GITHUB_TOKEN"]}})
    with pytest.raises(CheckError, match=r"containment.share: '\.\./up' is not a relative path"):
        TidegateConfig.model_validate({"containment": {"share": ["../up"]}})
    report = FlowReport(
        status="failed",
        mode="patch",
        run_id="r",
        repo="/r",
        attempts=1,
        max_attempts=1,
        fs_mode="read-write",
        planner="structured",
    )
    dumped = report.model_dump(mode="json")
    assert FlowReport.model_validate_json(json.dumps(dumped)) == report
    with pytest.raises(CheckError, match="status: must be one of"):
        FlowReport.model_validate({**dumped, "status": "done"})
    with pytest.raises(CheckError, match=r"phases\.0\.attempt: missing"):
        FlowReport.model_validate({**dumped, "phases": [{}]})


def test_records_behave_as_frozen_structs() -> None:
    one, same, other = Inner(name="a"), Inner(name="a"), Inner(name="b")
    assert one == same and one != other and hash(one) == hash(same)
    assert one != ("a", 0) and Inner(name="a") != Outer(where=Path("/"))
    assert repr(one) == "Inner(name='a', size=0)"
    assert [f.name for f in msgspec.structs.fields(Outer)][:3] == ["where", "colour", "kind"]
    assert msgspec.structs.replace(one, size=2) == Inner(name="a", size=2)
    with pytest.raises(CheckError, match="size: must be at least 0"):
        msgspec.structs.replace(one, size=-2)
    with pytest.raises(AttributeError):
        del one.name  # type: ignore[misc]
    with pytest.raises(TypeError, match="Missing required argument 'name'"):
        Inner()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Unexpected keyword argument 'colour'"):
        Inner(name="a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Inner("a")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        hash(Outer(where=Path("/")))  # a list field: as unhashable as the dataclass's


def test_defaults_are_not_shared() -> None:
    first, second = Outer(where=Path("/")), Outer(where=Path("/"))
    assert first.items == [] and first.items is not second.items
