"""``tidegate.config.tighten``: how the repository's ``[tool.tidegate]`` combines with the
user's configuration, key by key (pure: no files)."""

from __future__ import annotations

import msgspec
import pytest

from tidegate.config.records import TidegateConfig
from tidegate.config.tighten import TIGHTEN, tighten
from tidegate.errors import UsageError
from tidegate.records.checked import Checked

SOURCE = "pyproject.toml [tool.tidegate]"


def _keys(record: type[Checked], prefix: str = "") -> list[str]:
    out = []
    for f in msgspec.structs.fields(record):
        default = f.default_factory() if callable(f.default_factory) else f.default
        if isinstance(default, Checked):
            out += _keys(type(default), f"{prefix}{f.encode_name}.")
        else:
            out.append(f"{prefix}{f.encode_name}")
    return out


def test_every_setting_has_a_decided_direction() -> None:
    """A new setting must say how a repository may set it before it can ship."""
    assert sorted(_keys(TidegateConfig)) == sorted(TIGHTEN)


def test_a_setting_without_a_rule_is_the_users_only() -> None:
    """A key nested below a rule follows it (``model.retry.max_attempts``: the user's)."""
    users = TidegateConfig.model_validate({"model": {"retry": {"max_attempts": 2}}})
    config, ignored = tighten(users, {"model": {"retry": {"max_attempts": 50}}}, SOURCE)
    assert config.model == {"retry": {"max_attempts": 2}}
    assert [line.split(" ignored")[0] for line in ignored] == [
        f"{SOURCE} model.retry.max_attempts = 50"
    ]


@pytest.mark.parametrize(
    ("mine", "theirs", "expected"),
    [("none", "auto", "auto"), ("auto", "required", "required"), ("required", "none", "required")],
)
def test_the_containment_mode_only_rises(mine: str, theirs: str, expected: str) -> None:
    users = TidegateConfig.model_validate({"containment": {"mode": mine}})
    config, ignored = tighten(users, {"containment": {"mode": theirs}}, SOURCE)
    assert config.containment.mode == expected
    assert bool(ignored) == (expected != theirs)


def test_a_value_equal_to_the_users_is_silent() -> None:
    users = TidegateConfig()
    table = {"containment": {"mode": "auto", "share": [".venv", "node_modules"]}, "model": {}}
    assert tighten(users, table, SOURCE) == (users, ())


def test_lists_narrow_in_the_users_order_and_protected_grows() -> None:
    users = TidegateConfig.model_validate(
        {"containment": {"env": ["A_OPTS", "B_OPTS", "C_OPTS"]}, "validate": {"protected": ["x"]}}
    )
    table = {
        "containment": {"env": ["C_OPTS", "D_OPTS", "A_OPTS", "D_OPTS"]},
        "validate": {"protected": ["y", "x", "y"]},
    }
    config, ignored = tighten(users, table, SOURCE)
    assert config.containment.env == ("A_OPTS", "C_OPTS")
    assert config.validate_.protected == ("x", "y")
    assert [line.split(" ignored")[0] for line in ignored] == [
        f"{SOURCE} containment.env entry 'D_OPTS'"
    ]


def test_a_bad_repository_table_is_refused_naming_it() -> None:
    with pytest.raises(UsageError, match=r"pyproject.toml \[tool.tidegate\].*max_files"):
        tighten(TidegateConfig(), {"validate": {"max_files": 0}}, SOURCE)
    with pytest.raises(UsageError, match="not a known field"):
        tighten(TidegateConfig(), {"containment": {"mood": "none"}}, SOURCE)
