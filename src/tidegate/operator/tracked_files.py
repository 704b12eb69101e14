"""The repository's tracked files as they were before an agent ran on it, to put back
whatever the agent rewrote (``engineer agent-submit``)."""

from __future__ import annotations

import os
from pathlib import Path


class TrackedFiles:
    """The repository's tracked files before the launch, to put back what the agent
    rewrote: a dirty file's bytes are kept; a clean one is restored from the index."""

    def __init__(self, root: Path) -> None:
        from tidegate.git.command import Git

        self.root = root
        self.git = Git(root)
        listed = self.git.run("ls-files", "-z", "--cached").stdout.split(b"\0")
        self.paths = [p.decode("utf-8", "surrogateescape") for p in listed if p]
        self.stats = {p: _stat(root / p) for p in self.paths}
        dirty = self.git.run("diff", "--name-only", "-z").stdout.split(b"\0")
        self.saved = {}
        for raw in dirty:
            if raw:
                path = raw.decode("utf-8", "surrogateescape")
                try:
                    self.saved[path] = (root / path).read_bytes()
                except OSError:
                    continue

    def restore(self) -> list[str]:
        restored = []
        for path in self.paths:
            if _stat(self.root / path) == self.stats[path]:
                continue
            target = self.root / path
            before = self.stats[path]
            if before is None:  # absent before the launch: absent again
                target.unlink(missing_ok=True)
                restored.append(path)
                continue
            data = self.saved.get(path)
            if data is None:
                data = self.git.run("cat-file", "blob", f":{path}").stdout
            temp = target.with_name(f".{target.name}.tidegate-restore")
            temp.write_bytes(data)
            os.chmod(temp, before[3])
            os.replace(temp, target)
            restored.append(path)
        return restored


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode & 0o7777)
