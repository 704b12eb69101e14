"""Whole numbers read from text a person, a file or a model wrote: ASCII digits only.

Every format tidegate reads (objectives, terminal steps, ledger cells, records) means ASCII
decimal digits by a number. Python's own tests mean more: ``str.isdigit`` accepts ``²``,
which ``int`` then refuses with a ``ValueError``; ``\\d`` and ``int`` accept ``٣``
(Arabic-Indic three) and read it as 3; and ``int`` refuses more than 4300 digits. So every
number parsed from such text goes through :func:`whole_number`, which answers the value
or ``None`` (the caller says, in one line, what it expected), never an exception.
"""

from __future__ import annotations

import re

MAX_DIGITS = 18
"""More digits than any count, size or limit tidegate reads (below 2**63)."""

DIGITS = rf"[0-9]{{1,{MAX_DIGITS}}}"
"""The same, as a piece of a larger pattern (an id like ``E-12``)."""
_WHOLE = re.compile(DIGITS)


def whole_number(text: str, low: int = 0, high: int | None = None) -> int | None:
    """``text`` as an int when it is ASCII digits only (no sign, no spaces, at most
    :data:`MAX_DIGITS`) with a value in ``[low, high]``; else ``None``."""
    if _WHOLE.fullmatch(text) is None:
        return None
    value = int(text)
    if value < low or (high is not None and value > high):
        return None
    return value
