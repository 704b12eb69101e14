"""Where tidegate keeps its state when nothing names a place: the one answer the state
root, the read path and the sandbox's hidden paths share."""

from __future__ import annotations

import os
import sys


def user_state_dir() -> str:
    """``platformdirs.user_state_dir("tidegate")`` in the plain Linux case
    (``$XDG_STATE_HOME/tidegate`` or ``~/.local/state/tidegate``) without importing
    platformdirs (a unit test compares the two); any other case asks platformdirs."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    home = os.environ.get("HOME", "")
    android = os.environ.get("ANDROID_DATA") or os.environ.get("ANDROID_ROOT")
    if sys.platform == "linux" and not android and not hasattr(sys, "getandroidapilevel"):
        if xdg.startswith("/"):
            return os.path.join(xdg, "tidegate")
        if home.startswith("/"):
            return os.path.join(os.path.expanduser("~/.local/state"), "tidegate")
    import platformdirs

    return str(platformdirs.user_state_dir("tidegate"))
