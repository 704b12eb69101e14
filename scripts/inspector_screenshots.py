"""Screenshots of the run inspector's main pages, taken in a real headless Chromium.

Run: .venv/bin/python scripts/inspector_screenshots.py [OUT_DIR]   (default docs/inspector)

It records real runs in a scratch repository and state root (a run that succeeds, one
that fails, a scripted model's, one whose checkpoint chain is then edited with sqlite3), serves them with
``tidegate.inspector``, and saves ``runs.png``, ``run.png`` (a scripted model's run: tool
calls, transcript, a failed and a fixed attempt), ``tampered.png`` and ``phone.png`` (a
failed run at a phone's width). Needs Debian's ``chromium`` and
``chromium-driver`` and the ``selenium`` package; ``browser()`` is also what the
inspector's browser tests drive (tests/e2e/test_inspector_browser.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
)  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent
FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
_BLOCK = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a {} b\n>>>>>>> REPLACE\n"
MODEL = {
    "model": "screenshot-model",
    "turns": [
        {
            "tool_calls": [
                {"id": "g1", "name": "workspace_grep", "arguments": {"pattern": "def add"}}
            ]
        },
        {"tool_calls": [{"id": "r1", "name": "workspace_read", "arguments": {"path": "calc.py"}}]},
        {"text": "Plan: change the operator in add() in calc.py."},
        {"text": _BLOCK.format("*")},
        {"text": "Plan: add() must use +."},
        {"text": _BLOCK.format("+")},
    ],
}
"""A scripted model run: it explores, proposes a wrong fix, reads VERIFY's feedback and
fixes it on its second attempt (tool calls, turns and effects for the transcript)."""


def missing() -> str | None:
    """Why the browser cannot be driven here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing: `apt-get install chromium chromium-driver` ({package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is missing: `pip install -e '.[dev]'`"
    return None


@contextmanager
def browser(width: int = 1200, height: int = 900) -> Iterator[WebDriver]:
    """Debian's Chromium, headless, with a fresh profile, driven by its own chromedriver
    (nothing downloaded: Selenium Manager is never asked)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="tidegate-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # CSP reports, errors
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.set_window_size(width, height)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _run(*args: str, cwd: Path, env: dict[str, str]) -> str:
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if res.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: {res.stderr}")
    return res.stdout


def record(scratch: Path) -> tuple[Path, Path, list[str]]:
    """A repository with four recorded runs (succeeded, failed, a model's, tampered): its
    root, the state root and the run ids, oldest first."""
    repo, state = scratch / "calc", scratch / "state"
    repo.mkdir()
    env = {
        **os.environ,
        "TIDEGATE_STATE_ROOT": str(state),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _run("git", "init", "-q", cwd=repo, env=env)
    _run("git", "add", "-A", cwd=repo, env=env)
    _run("git", "commit", "-qm", "calc", cwd=repo, env=env)
    tidegate = (sys.executable, "-m", "tidegate", "run", "--objective", FIX)
    check = "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)'"
    _run(*tidegate, "--verify", check, cwd=repo, env=env)
    _run("git", "checkout", "-q", "calc.py", cwd=repo, env=env)
    _run(
        *tidegate, "--verify", "python3 -c 'raise SystemExit(\"tests failed\")'", cwd=repo, env=env
    )
    script = scratch / "model.json"
    script.write_text(json.dumps(MODEL))
    _run(
        sys.executable, "-m", "tidegate", "run", "--objective", "Make add() add.",
        "--model", f"scripted:{script}", "--verify", check, cwd=repo, env=env,
    )  # fmt: skip
    _run("git", "checkout", "-q", "calc.py", cwd=repo, env=env)
    _run(*tidegate, "--verify", "true", "--max-attempts", "1", cwd=repo, env=env)
    _run("git", "checkout", "-q", "calc.py", cwd=repo, env=env)
    (path,) = state.glob("*/runs.sqlite3")
    with sqlite3.connect(path) as db:
        ids = [r[0] for r in db.execute("SELECT run_id FROM runs ORDER BY seq")]
        db.execute(
            "UPDATE checkpoints SET event_seq = event_seq + 100 WHERE run_id = ? AND seq = 2",
            (ids[-1],),
        )
    return repo, state, ids


def shoot(driver: WebDriver, url: str, out: Path, *, whole: bool = True) -> None:
    """The page at ``url``, whole (the window grown to the page's height) or as much as
    the window shows."""
    driver.get(url)
    if not whole:
        driver.save_screenshot(str(out))
        return
    width = driver.get_window_size()["width"]
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(height + 120, 600), 6000))
    driver.save_screenshot(str(out))


def main(argv: list[str]) -> int:
    reason = missing()
    if reason:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    out = Path(argv[0]) if argv else ROOT / "docs" / "inspector"
    out.mkdir(parents=True, exist_ok=True)
    from tidegate.inspector.server import Inspector

    with tempfile.TemporaryDirectory(prefix="tidegate-shots-") as scratch:
        repo, state, ids = record(Path(scratch))
        inspector = Inspector(str(repo), str(state)).start()
        try:
            with browser(1100, 800) as driver:
                shoot(driver, inspector.url, out / "runs.png")
                shoot(driver, f"{inspector.url}run/{ids[2]}", out / "run.png")
                shoot(driver, f"{inspector.url}run/{ids[3]}", out / "tampered.png")
            with browser(390, 844) as driver:
                shoot(driver, f"{inspector.url}run/{ids[1]}", out / "phone.png", whole=False)
        finally:
            inspector.close()
    for name in ("runs", "run", "tampered", "phone"):
        print(out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
