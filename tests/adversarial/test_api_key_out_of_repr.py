"""A model's API key never shows in a ``repr``: tracebacks, logs and debug prints of the
connection (or of the model holding it) carry everything but the key."""

from __future__ import annotations

from tidegate.models.settings import resolve_model

KEY = "sk-attacker-would-love-this-0123456789"


def test_the_key_is_kept_out_of_the_connection_s_repr() -> None:
    for spec, var in (
        ("openai:gpt-x", "OPENAI_API_KEY"),
        ("anthropic:claude-x", "ANTHROPIC_API_KEY"),
    ):
        model = resolve_model(spec, {"base_url": "http://127.0.0.1:9/v1"}, {var: KEY})
        connection = model._connection  # type: ignore[attr-defined]
        assert connection.api_key == KEY  # the key is there, to be sent
        shown = repr(connection) + str(connection) + f"{connection!r}" + repr([connection])
        assert KEY not in shown
        assert "base_url='http://127.0.0.1:9/v1'" in shown  # the rest is still shown
        assert KEY not in repr(model)
