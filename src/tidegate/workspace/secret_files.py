"""Secret-shaped files: withheld from the model's workspace tools unless the user allows.

A repository often holds files that are nothing but credentials: an untracked ``.env``, a
deploy key, ``.npmrc`` with a registry token. A model reading the workspace has no need
for their content, and whatever it reads can end up in a prompt sent to a provider. The
workspace port therefore refuses to read, edit or grep them, and listings and globs name
them under ``excluded`` as withheld instead of listing them.

The decision is made on the resolved path (a symlink ``notes.txt -> .env`` is withheld
too), by the file's name. Templates (``.env.example``) and public keys (``*.pub``) are
not secrets. The user allows a file with ``[tool.tidegate.tools] readable_secrets``
(globs over root-relative paths, or bare names matched anywhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

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
MAX_SCANNED = 100_000
"""``find_in`` stops after this many directory entries (a huge tree is not walked whole)."""
_NOT_ENTERED = frozenset({".git", "node_modules", "__pycache__", ".tox", ".mypy_cache"})


@dataclass(frozen=True)
class SecretFiles:
    """Which workspace paths the model's tools withhold. ``allowed``: the user's
    ``readable_secrets`` globs."""

    allowed: tuple[str, ...] = ()

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
        """The withheld regular files under ``root`` (not following symlinks, not entering
        ``.git`` or dependency caches, at most ``MAX_SCANNED`` entries): what a model's
        command must not read either."""
        found: list[Path] = []
        seen = 0
        stack = [root]
        while stack and seen < MAX_SCANNED:
            here = stack.pop()
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _NOT_ENTERED:
                        stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    rel = Path(entry.path).relative_to(root).as_posix()
                    if self.withheld(rel):
                        found.append(Path(entry.path))
        return sorted(found)
