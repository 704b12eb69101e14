"""Shadow fidelity: make sure a verification in the shadow tests the shadow's code.

An editable install (``pip install -e .``) makes an interpreter import the package from
the *main* work tree: ``pytest`` run in the shadow would then test the user's unmodified
code and pass or fail for the wrong reason. We find the interpreter the verify command
will use, ask it where it imports from, and look for paths inside the main work tree —
in ``sys.path`` (legacy ``.pth`` editables) or in setuptools' ``__editable__`` finders and
``.pth`` files of its site-packages. Each such path is mapped to the same place in the
shadow and put first on ``PYTHONPATH``, which Python searches before site-packages and
before the editable finders.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec

_PROBE = (
    "import json, site, sys\n"
    "dirs = list(site.getsitepackages()) + [site.getusersitepackages()]\n"
    "print(json.dumps({'path': sys.path, 'site': dirs}))\n"
)
_PYTHON_NAMES = ("python", "python3")


class Fidelity(msgspec.Struct):
    interpreter: str | None = None
    main_paths: list[str] = msgspec.field(default_factory=list)
    pythonpath: list[str] = msgspec.field(default_factory=list)

    def note(self) -> str | None:
        if not self.main_paths:
            return None
        return (
            f"{self.interpreter} imports from the main work tree ({', '.join(self.main_paths)}, "
            "an editable install); the shadow's copies are put first on PYTHONPATH for VERIFY"
        )


Prober = Callable[[list[str], dict[str, str]], bytes | None]
"""Runs an argv with an environment and returns its stdout (None: it failed). The caller's
runner, under the guard and containment of the verify command whose interpreter it asks:
this module starts no process itself."""


def python_fidelity(
    command: str, main_root: Path, shadow_root: Path, env: dict[str, str], *, probe_in: Prober
) -> Fidelity:
    """Detect an editable install of the main work tree for the verify command's Python."""
    interpreter = find_interpreter(command, env, base=main_root)
    if interpreter is None:
        return Fidelity()
    probe = _probe(interpreter, env, probe_in)
    if probe is None:
        return Fidelity(interpreter)
    root = str(main_root)
    found: list[str] = [p for p in probe["path"] if _inside(p, root)]
    for site_dir in probe["site"]:
        found.extend(_editable_targets(Path(site_dir), root))
    mains = list(dict.fromkeys(found))
    shadow_paths = []
    for path in mains:
        rel = os.path.relpath(path, root)
        target = shadow_root if rel == "." else shadow_root / rel
        if target.is_dir():
            shadow_paths.append(str(target))
    return Fidelity(interpreter, mains, list(dict.fromkeys(shadow_paths)))


def find_interpreter(command: str, env: dict[str, str], base: Path | None = None) -> str | None:
    """The Python executable a shell command will run, when it can be told.

    A relative path (``.venv/bin/python``) is resolved against ``base``, the main work tree:
    in the shadow it names the main tree's ignored directory, shared read-only, so the main
    tree's copy is the interpreter that will run.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    words = [w for w in words if "=" not in w.split("/")[0]]  # skip VAR=value prefixes
    if not words:
        return None
    first_word = words[0]
    if "/" in first_word and not os.path.isabs(first_word):
        if base is None:
            return None
        first_word = str(base / first_word)
    exe = shutil.which(first_word, path=env.get("PATH"))
    if exe is None:
        return None
    name = os.path.basename(exe)
    if name.startswith(_PYTHON_NAMES):
        return exe
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    shebang = first[2:].decode("utf-8", "replace").split()
    if not shebang:
        return None
    if os.path.basename(shebang[0]) == "env" and len(shebang) > 1:
        return shutil.which(shebang[1], path=env.get("PATH"))
    return shebang[0] if os.path.basename(shebang[0]).startswith(_PYTHON_NAMES) else None


def _probe(interpreter: str, env: dict[str, str], probe_in: Prober) -> dict[str, list[str]] | None:
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    try:
        out = probe_in([interpreter, "-c", _PROBE], clean)
        data = json.loads(out) if out is not None else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _editable_targets(site_dir: Path, root: str) -> list[str]:
    """Directories inside ``root`` named by editable-install files in ``site_dir``."""
    if not site_dir.is_dir():
        return []
    found: list[str] = []
    for entry in site_dir.iterdir():
        name = entry.name
        if not (
            name.endswith(".pth") or (name.startswith("__editable__") and name.endswith(".py"))
        ):
            continue
        try:
            text = entry.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if root not in text:
            continue
        for token in _quoted_or_lines(text):
            if _inside(token, root):
                path = Path(token)
                # A finder maps a package to its directory: its parent goes on sys.path.
                found.append(str(path.parent if name.endswith(".py") else path))
    return found


def _quoted_or_lines(text: str) -> list[str]:
    tokens = [line.strip() for line in text.splitlines()]
    for quote in ("'", '"'):
        parts = text.split(quote)
        tokens.extend(parts[1::2])
    return tokens


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
