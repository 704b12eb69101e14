"""The run path's records: frozen msgspec structs, checked whenever one is made.

A run's request, its configuration and its report are plain data read from a command line,
a TOML file or the run store, and written back as JSON. ``Checked`` is a frozen,
keyword-only ``msgspec.Struct`` that refuses unknown keys; msgspec checks (and where it is
lossless, converts) every field against its annotation (``Annotated[int, Meta(ge=1)]`` for
bounds, ``field(name=...)`` for a key other than the name) when a record is read, and
``__post_init__`` runs the same check when one is made by hand or copied, so a record that
exists is a valid one. A ``Path`` is read from a string; a float must be finite;
``Annotated[T, check(f)]`` adds ``f(value)``, a ValueError from which is the field's error.

The method names are pydantic's (``model_validate``, ``model_dump``, ``model_copy``...) so
code handling records of either kind reads the same. Bad input raises ``CheckError``: one
line naming the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, Self, dataclass_transform

import msgspec
import msgspec.inspect as mi
from msgspec.structs import astuple, fields, force_setattr, replace

from tidegate.text.jsonparse import parse_json

Loc = tuple[str | int, ...]
_reading = ContextVar("_reading", default=False)
"""True while msgspec builds records: their fields are checked already."""
_checks: dict[type, list[tuple[str, str, Callable[[Any], None]]]] = {}
"""Each record's ``check(f)`` fields: name, key and ``f``."""


class CheckError(ValueError):
    """A value that does not fit its record: ``loc`` is where (field names, list indexes),
    ``msg`` what is wrong. ``errors()`` has pydantic's shape, for handlers of both."""

    def __init__(self, loc: Loc, msg: str) -> None:
        self.loc = loc
        self.msg = msg
        super().__init__(f"{'.'.join(str(p) for p in loc) or 'the document'}: {msg}")

    def errors(self) -> list[dict[str, Any]]:
        return [{"loc": self.loc, "msg": self.msg}]


def check(f: Callable[[Any], None]) -> msgspec.Meta:
    """``Annotated[T, check(f)]``: ``f`` is called with the field's checked value."""
    return msgspec.Meta(extra={"check": f})


class _Record(msgspec.StructMeta):
    """Makes every record keyword-only, frozen and refusing unknown keys (a class's own
    ``kw_only`` covers only the fields it defines, so it is given to each)."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], /, **config: Any
    ) -> _Record:
        config |= {"kw_only": True, "frozen": True, "forbid_unknown_fields": True}
        return super().__new__(mcls, name, bases, namespace, **config)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(msgspec.field,))
class Checked(msgspec.Struct, metaclass=_Record, kw_only=True, frozen=True):
    """The base of a checked record (``msgspec.structs.fields``, ``replace``... work)."""

    def __post_init__(self) -> None:
        """Read by msgspec: the checks it cannot express (finite floats, ``check(f)``).
        Made by hand or copied: read again through msgspec, whose record has had them."""
        cls = type(self)
        if not _reading.get():  # made by hand or copied: read its fields as msgspec would
            read = cls.model_validate(
                dict(zip(self.__struct_encode_fields__, astuple(self), strict=True))
            )
            for name in self.__struct_fields__:
                force_setattr(self, name, getattr(read, name))
            return
        if cls not in _checks:
            _checks[cls] = [
                (f.name, f.encode_name, m.extra["check"])
                for f in fields(cls)
                for m in getattr(f.type, "__metadata__", ())
                if isinstance(m, msgspec.Meta) and m.extra and "check" in m.extra
            ]
        for key, value in zip(self.__struct_encode_fields__, astuple(self), strict=True):
            if isinstance(value, float) and not math.isfinite(value):
                raise CheckError((key,), f"must be a finite number, not {value!r}")
        for name, key, f in _checks[cls]:
            try:
                f(getattr(self, name))
            except ValueError as exc:
                raise CheckError((key,), str(exc)) from None

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """A record from a mapping of its fields' keys (or the record itself)."""
        token = _reading.set(True)
        try:
            return msgspec.convert(data, cls, dec_hook=_path)
        except msgspec.ValidationError as exc:
            raise _error(cls, exc, data) from None
        finally:
            _reading.reset(token)

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Self:
        try:
            data = parse_json(text)
        except ValueError as exc:
            raise CheckError((), f"not valid JSON ({exc})") from None
        return cls.model_validate(data)

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        by_alias: bool = False,
        exclude: set[str] | None = None,
    ) -> dict[str, Any]:
        """The record as a dict (nested records too); ``mode="json"``: JSON types only."""
        keys = self.__struct_encode_fields__ if by_alias else self.__struct_fields__
        return {
            key: _dump(value, mode == "json", by_alias)
            for key, name, value in zip(keys, self.__struct_fields__, astuple(self), strict=True)
            if not exclude or name not in exclude
        }

    def model_dump_json(self) -> str:
        """Compact JSON (UTF-8 kept as it is), as pydantic writes it."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with ``update``'s fields replaced; the new values are checked too."""
        return replace(self, **(update or {}))


def _path(tp: type, value: Any) -> Any:
    """msgspec's hook for types it does not know: ``Path`` (from a string), ``object``."""
    if tp is object or (tp is Path and isinstance(value, Path)):
        return value
    if tp is Path and isinstance(value, str):
        return Path(value)
    kind = type(value).__name__
    raise CheckError((), f"must be a path, not {_GOT.get(kind, kind)}")


def _dump(value: Any, json_mode: bool, by_alias: bool) -> Any:
    if isinstance(value, Checked):
        return value.model_dump(mode="json" if json_mode else "python", by_alias=by_alias)
    if isinstance(value, list | tuple):
        items = [_dump(v, json_mode, by_alias) for v in value]
        return items if json_mode or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _dump(v, json_mode, by_alias) for k, v in value.items()}
    return msgspec.to_builtins(value, enc_hook=str) if json_mode else value


_WANT = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false"}
_WANT |= {"array": "a list", "object": "an object", "null": "null"}
_GOT = {"array": "list", "object": "dict", "NoneType": "null", "PosixPath": "path"}
_BOUND = {">=": "at least", ">": "greater than", "<=": "at most", "<": "less than"}


def _error(cls: type, exc: msgspec.ValidationError, data: Any) -> CheckError:
    """msgspec's message as a ``CheckError`` in the words the records have always used."""
    text, _, at = str(exc).partition(" - at `")
    parts = re.findall(r"\.([^.\[\]`]+)|\[(\d+)\]", at.rpartition("$")[2])
    loc: Loc = tuple(key or int(index) for key, index in parts)
    if isinstance(exc.__cause__, CheckError):  # from __post_init__ or the Path hook
        return CheckError((*loc, *exc.__cause__.loc), exc.__cause__.msg)
    if m := re.fullmatch(r"Object (missing required|contains unknown) field `(.*)`", text):
        return CheckError((*loc, m[2]), "missing" if m[1][0] == "m" else "not a known field")
    at_type = mi.type_info(cls)
    for part in loc:
        at_type = _inner(at_type, part)
    if (bad := text.removeprefix("Invalid enum value ")) != text:
        at_type = _inner(at_type, None)
        if isinstance(at_type, mi.EnumType):
            values: Any = [e.value for e in at_type.cls]
        else:
            values = at_type.values if isinstance(at_type, mi.LiteralType) else ()
        return CheckError(loc, f"must be one of {', '.join(map(repr, values))}, not {bad}")
    if m := re.match(r"Expected `(\w+)[^`]*`(?:, got `(\w+)`| ([<>]=?) (\S+))", text):
        if m[2]:
            dict_ = isinstance(_inner(at_type, None), mi.DictType)
            want = "a table" if dict_ else _WANT.get(m[1], f"a {m[1]}")
            return CheckError(loc, f"must be {want}, not {_GOT.get(m[2], m[2])}")
        for part in loc:
            data = data[part] if isinstance(data, Mapping | list | tuple) else None  # type: ignore[index]
        if isinstance(data, float) and not math.isfinite(data):
            return CheckError(loc, f"must be a finite number, not {data!r}")
        return CheckError(loc, f"must be {_BOUND[m[3]]} {m[4]}, not {data!r}")
    return CheckError(loc, text)


def _inner(t: mi.Type, part: str | int | None) -> mi.Type:
    """The type of ``part`` of a value of type ``t`` (``None``: ``t`` without wrappers)."""
    while isinstance(t, mi.Metadata | mi.UnionType):  # X | None: X
        t = (
            t.type
            if isinstance(t, mi.Metadata)
            else next(x for x in t.types if not isinstance(x, mi.NoneType))
        )
    if isinstance(part, str) and isinstance(t, mi.StructType):
        return next(f.type for f in t.fields if f.encode_name == part)
    if isinstance(t, mi.ListType | mi.VarTupleType | mi.DictType) and part is not None:
        return t.value_type if isinstance(t, mi.DictType) else t.item_type
    return t
