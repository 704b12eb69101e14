"""Frozen dataclasses checked against their annotations: the run path's records.

A run's request, its configuration and its report are plain data read from a command line,
a TOML file or the run store, and written back as JSON. ``Checked`` makes each a frozen,
keyword-only dataclass whose every field is checked (and where it is lossless, converted)
against its annotation when it is made, so a record that exists is a valid one. It does
the part of a validation library these records need, at a fraction of its import cost: a
run imports this module instead of pydantic (~0.1 s of CPU on a cold start).

The types it knows: ``str``, ``int``, ``float`` (finite; an int becomes a float),
``bool``, ``Path`` (from a string), an ``Enum`` (from a value), ``Literal[...]``,
``X | None``, ``tuple[X, ...]`` and ``list[X]`` (from a list or a tuple), ``dict[str, X]``,
``Any``/``object`` (taken as they are) and other ``Checked`` records (from a mapping).
``spec()`` adds bounds (``ge``, ``gt``, ``le``), a field's key in mappings (``key``) and a
check of its own (``check``). Bad input raises ``CheckError``, which names the field.

The method names are pydantic's (``model_validate``, ``model_dump``, ``model_copy``...), so
code handling records of either kind reads the same; the semantics are narrower and
stricter: no string-to-number coercion, unknown keys always refused, and ``model_copy``
checks its update like any other construction.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, dataclass_transform

from tidegate.text.jsonparse import parse_json

Loc = tuple[str | int, ...]


class CheckError(ValueError):
    """A value that does not fit its record: ``loc`` is where (field names, list indexes),
    ``msg`` what is wrong. ``errors()`` has pydantic's shape, for handlers of both."""

    def __init__(self, loc: Loc, msg: str) -> None:
        self.loc = loc
        self.msg = msg
        super().__init__(f"{'.'.join(str(p) for p in loc) or 'the document'}: {msg}")

    def errors(self) -> list[dict[str, Any]]:
        return [{"loc": self.loc, "msg": self.msg}]


def spec(
    *,
    default: Any = dataclasses.MISSING,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    key: str | None = None,
    check: Callable[[Any], None] | None = None,
) -> Any:
    """A field with bounds, a mapping key other than its name (``key``) or a ``check``
    (called with the converted value; a ValueError it raises is the field's error)."""
    meta = {"ge": ge, "gt": gt, "le": le, "key": key, "check": check}
    return dataclasses.field(
        default=default,
        default_factory=default_factory,
        metadata={k: v for k, v in meta.items() if v is not None},
    )


class _Field:
    __slots__ = ("check", "field", "ge", "gt", "key", "le", "name", "required", "type")

    def __init__(self, f: dataclasses.Field[Any], hint: Any) -> None:
        self.field = f
        self.name = f.name
        self.required = f.default is dataclasses.MISSING and (
            f.default_factory is dataclasses.MISSING
        )
        self.type = hint
        self.key: str = f.metadata.get("key", f.name)
        self.ge = f.metadata.get("ge")
        self.gt = f.metadata.get("gt")
        self.le = f.metadata.get("le")
        self.check: Callable[[Any], None] | None = f.metadata.get("check")


@dataclass_transform(
    kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field, spec)
)
class Checked:
    """The base of a checked record; a subclass is made a frozen, keyword-only dataclass.

    The dataclass machinery only collects the fields (``dataclasses.fields``,
    ``replace`` and ``asdict`` work as on any dataclass); the methods it would generate
    (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, the frozen ``__setattr__``)
    are this class's own, shared by every record instead of compiled for each at import
    (~0.5 ms a class, on every start)."""

    _fields: ClassVar[tuple[_Field, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = None  # resolved at first use: annotations may name later classes
        dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)(cls)

    def __init__(self, **kwargs: Any) -> None:
        fields = self._checked_fields()
        if unknown := sorted(kwargs.keys() - {f.name for f in fields}):
            raise TypeError(f"{type(self).__qualname__}() got unexpected arguments {unknown}")
        for f in fields:
            if f.name in kwargs:
                value = kwargs[f.name]
            elif f.required:
                raise TypeError(f"{type(self).__qualname__}() missing the argument {f.name!r}")
            elif f.field.default is not dataclasses.MISSING:
                value = f.field.default
            else:
                value = f.field.default_factory()  # type: ignore[operator]
            object.__setattr__(self, f.name, value)
        self.__post_init__()

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self._checked_fields())
        return f"{type(self).__qualname__}({inner})"

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in self._checked_fields())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    @classmethod
    def _checked_fields(cls) -> tuple[_Field, ...]:
        fields = cls.__dict__.get("_fields")
        if fields is None:
            hints = typing.get_type_hints(cls)
            fields = tuple(_Field(f, hints[f.name]) for f in dataclasses.fields(cls))  # type: ignore[arg-type]
            cls._fields = fields
        return fields

    def __post_init__(self) -> None:
        for f in self._checked_fields():
            value = getattr(self, f.name)
            converted = _convert(f.type, value, (f.key,))
            _bounds(f, converted)
            if f.check is not None:
                try:
                    f.check(converted)
                except ValueError as exc:
                    raise CheckError((f.key,), str(exc)) from None
            if converted is not value:
                object.__setattr__(self, f.name, converted)

    # -- reading -------------------------------------------------------------------------

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """A record from a mapping of its fields' keys (or the record itself)."""
        return cls._from(data, ())

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Self:
        try:
            data = parse_json(text)
        except ValueError as exc:
            raise CheckError((), f"not valid JSON ({exc})") from None
        return cls._from(data, ())

    @classmethod
    def _from(cls, data: Any, loc: Loc) -> Self:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise CheckError(loc, f"must be an object, not {_kind(data)}")
        fields = cls._checked_fields()
        known = {f.key: f for f in fields}
        for key in data:
            if key not in known:
                raise CheckError((*loc, str(key)), "not a known field")
        kwargs = {known[key].name: value for key, value in data.items()}
        for f in fields:
            if f.name not in kwargs and f.required:
                raise CheckError((*loc, f.key), "missing")
        try:
            return cls(**kwargs)
        except CheckError as exc:
            if not loc:
                raise
            raise CheckError((*loc, *exc.loc), exc.msg) from None

    # -- writing -------------------------------------------------------------------------

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        by_alias: bool = False,
        exclude: set[str] | None = None,
    ) -> dict[str, Any]:
        """The record as a dict (nested records too); ``mode="json"``: JSON types only."""
        json_mode = mode == "json"
        return {
            (f.key if by_alias else f.name): _dump(getattr(self, f.name), json_mode, by_alias)
            for f in self._checked_fields()
            if not exclude or f.name not in exclude
        }

    def model_dump_json(self) -> str:
        """Compact JSON (UTF-8 kept as it is), as pydantic writes it."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with ``update``'s fields replaced; the new values are checked too."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


def _dump(value: Any, json_mode: bool, by_alias: bool) -> Any:
    if isinstance(value, Checked):
        return value.model_dump(mode="json" if json_mode else "python", by_alias=by_alias)
    if isinstance(value, list | tuple):
        items = [_dump(v, json_mode, by_alias) for v in value]
        return items if json_mode or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _dump(v, json_mode, by_alias) for k, v in value.items()}
    if json_mode:
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, Path):
            return str(value)
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _bounds(f: _Field, value: Any) -> None:
    if value is None:
        return
    if f.ge is not None and value < f.ge:
        raise CheckError((f.key,), f"must be at least {f.ge}, not {value!r}")
    if f.gt is not None and value <= f.gt:
        raise CheckError((f.key,), f"must be greater than {f.gt}, not {value!r}")
    if f.le is not None and value > f.le:
        raise CheckError((f.key,), f"must be at most {f.le}, not {value!r}")


def _convert(tp: Any, value: Any, loc: Loc) -> Any:
    """``value`` as a ``tp``: the same object when it already is one."""
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    if origin is None:
        return _convert_plain(tp, value, loc)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None:
            if type(None) in args:
                return None
            raise CheckError(loc, "must not be null")
        options = [a for a in args if a is not type(None)]
        error: CheckError | None = None
        for option in options:
            try:
                return _convert(option, value, loc)
            except CheckError as exc:
                error = error or exc
        assert error is not None
        raise error
    if origin is Literal:
        for allowed in args:
            if type(value) is type(allowed) and value == allowed:
                return value
        raise CheckError(loc, f"must be one of {', '.join(map(repr, args))}, not {value!r}")
    if origin is tuple or origin is list:
        if not isinstance(value, list | tuple):
            raise CheckError(loc, f"must be a list, not {_kind(value)}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError(f"only tuple[X, ...] is supported, not {tp}")
        inner = args[0]
        items = [_convert(inner, v, (*loc, i)) for i, v in enumerate(value)]
        want = tuple if origin is tuple else list
        if type(value) is want and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return want(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise CheckError(loc, f"must be a table, not {_kind(value)}")
        key_type, value_type = args
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            if key_type is str and not isinstance(k, str):
                raise CheckError((*loc, str(k)), "keys must be strings")
            out[k] = _convert(value_type, v, (*loc, k))
            changed = changed or out[k] is not v
        return out if changed else value
    raise TypeError(f"a Checked field cannot be a {tp}")


def _convert_plain(tp: Any, value: Any, loc: Loc) -> Any:
    if tp is type(None):
        if value is None:
            return None
        raise CheckError(loc, f"must be null, not {_kind(value)}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise CheckError(loc, f"must be true or false, not {_kind(value)}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value if type(value) is int else int(value)
        raise CheckError(loc, f"must be an integer, not {_kind(value)}")
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise CheckError(loc, f"must be a finite number, not {value!r}")
            return value if type(value) is float else float(value)
        raise CheckError(loc, f"must be a number, not {_kind(value)}")
    if tp is str:
        if isinstance(value, enum.Enum) and isinstance(value.value, str):
            return value.value
        if isinstance(value, str):
            return value if type(value) is str else str.__str__(value)
        raise CheckError(loc, f"must be a string, not {_kind(value)}")
    if isinstance(tp, type):
        if issubclass(tp, Checked):
            return tp._from(value, loc)
        if isinstance(value, tp):
            return value
        if issubclass(tp, enum.Enum):
            try:
                return tp(value)
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in tp)
                raise CheckError(loc, f"must be one of {allowed}, not {value!r}") from None
        if issubclass(tp, Path):
            if isinstance(value, str):
                return tp(value)
            raise CheckError(loc, f"must be a path, not {_kind(value)}")
    raise TypeError(f"a Checked field cannot be a {tp}")
