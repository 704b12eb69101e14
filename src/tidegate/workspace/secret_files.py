"""Secret-shaped files: withheld from the model's workspace tools unless the user allows.

A repository often holds files that are nothing but credentials: an untracked ``.env``, a
deploy key, ``.npmrc`` with a registry token. A model reading the workspace has no need
for their content, and whatever it reads can end up in a prompt sent to a provider. The
workspace port therefore refuses to read, edit or grep them, and listings and globs name
them under ``excluded`` as withheld instead of listing them.

The decision is made on the resolved path (a symlink ``notes.txt -> .env`` is withheld
too), by the file's name. Templates (``.env.example``) and public keys (``*.pub``) are
not secrets. The user allows a file with ``readable_secrets`` in ``[tools]`` of
``.tidegate/config.toml`` (globs over root-relative paths, or bare names matched anywhere;
a repository's ``pyproject.toml`` can only narrow that list).

``find_in(root)`` lists them for a contained command's mask, through one
``SecretIndex`` per root held by this object for its life (the tool context's): one full
walk, then an exact incremental refresh per command (``workspace/secret_index.py``).
"""

from __future__ import annotations

import os
import re
import threading
from fnmatch import fnmatchcase, translate
from pathlib import Path, PurePosixPath

import msgspec

from tidegate.workspace.secret_index import SecretIndex

SECRET_FILE_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".htpasswd",
    ".pgpass",
    ".dockercfg",
    "credentials",
    "credentials.*",
    "*credentials.json",
    "secrets.yml",
    "secrets.yaml",
    "secrets.json",
    "*.tfvars",
    "terraform.tfstate*",
)
"""File names (globs) whose content is a secret."""
NOT_SECRET = ("*.example", "*.sample", "*.template", "*.dist", "*.pub", "*.md", "*.txt")
"""Names that match the list above but are templates, public keys or documentation."""
WITHHELD = "withheld: secret-shaped file"
_SECRET_NAME = re.compile("|".join(translate(pattern) for pattern in SECRET_FILE_NAMES))


def secret_shaped(name: str) -> bool:
    """A fast first test of a file name: whether it matches ``SECRET_FILE_NAMES`` at all."""
    return _SECRET_NAME.match(name) is not None


class SecretFiles(msgspec.Struct, frozen=True):
    """Which workspace paths the model's tools withhold. ``allowed``: the user's
    ``readable_secrets`` globs."""

    allowed: tuple[str, ...] = ()
    _indexes: dict[str, SecretIndex] = msgspec.field(default_factory=dict)
    """A cache (not compared, hashed or shown)."""
    _lock: threading.Lock = msgspec.field(default_factory=threading.Lock)

    def __eq__(self, other: object) -> bool:
        return type(other) is SecretFiles and other.allowed == self.allowed

    def __hash__(self) -> int:
        return hash(self.allowed)

    def __repr__(self) -> str:
        return f"SecretFiles(allowed={self.allowed!r})"

    def withheld(self, rel: str | PurePosixPath) -> bool:
        """Whether the file at root-relative ``rel`` (resolved) is withheld."""
        path = PurePosixPath(rel)
        name = path.name
        if not any(fnmatchcase(name, pattern) for pattern in SECRET_FILE_NAMES):
            return False
        if any(fnmatchcase(name, pattern) for pattern in NOT_SECRET):
            return False
        text = path.as_posix()
        return not any(
            fnmatchcase(text, glob) or ("/" not in glob and fnmatchcase(name, glob))
            for glob in self.allowed
        )

    def find_in(self, root: Path) -> list[Path]:
        """The withheld regular files under ``root`` (symlinks not followed, ``.git`` not
        entered, no cap on the walk): what a model's command must not read either; then
        the directories that could not be listed, which the containment covers whole (they
        may hold secrets the walk could not see). Exact at each call; after the first, only
        changed directories are listed again. Raises ``UnlistableRoot`` (a
        ``PermissionError``) when ``root`` itself cannot be listed."""
        real = os.path.realpath(root)
        with self._lock:
            index = self._indexes.get(real)
            if index is None:
                index = self._indexes[real] = SecretIndex(real, secret_shaped, self.withheld)
        files = index.refresh()
        return [Path(real, rel) for rel in (*files, *index.unlistable)]

    def note_changed(self, root: Path, paths: list[str]) -> None:
        """Root-relative paths a command changed (its captured effects), if known: their
        directories are listed again at the next ``find_in`` (exact without it too)."""
        index = self._indexes.get(os.path.realpath(root))
        if index is not None:
            index.note_changed(paths)
