"""The run inspector in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium with ``scripts/inspector_screenshots.py``'s setup).

Real runs are recorded by the CLI; the pages show them, with the hashes the store holds;
each attempt's proposal is the blob the run kept (its SHA-256 shown); a tampered checkpoint
chain shows as refused; a running run's page follows the run. An XSS corpus -- in a real
file name (and so a real proposal) and a real command's output, in a real tool call's
arguments, planted with sqlite3 in messages, notes, feedback, findings, phase details,
attempt records, tool calls, the transcript and a run id, and planted with git as a
proposal (every field of one, and a blob that is no proposal at all) -- is shown as text:
no script runs (``window.__pwned`` and the title stay as they were), no element or
handler is injected, and the browser reports no blocked script (the escaping, not only
the Content-Security-Policy, keeps them inert). The token is required, and the pages
fit a phone's width.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from scripts.inspector_screenshots import browser, missing

from tests.conftest import CALC, Repo, tidegate_cli
from tests.e2e._inspector import edit, query, record_two, report, served, set_report
from tidegate.text.sanitize import sanitize

REASON = missing()
if REASON is not None and os.environ.get("CI"):  # CI installs them (.ci/run): never skip there
    raise RuntimeError(f"CI must run the inspector's browser tests: {REASON}")
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no browser here: {REASON}")

if REASON is None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

PAYLOADS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    '<svg onload="window.__pwned=3"><script>window.__pwned=4</script></svg>',
    "<svg><animate onbegin=window.__pwned=24 attributeName=x dur=1s>",
    "javascript:window.__pwned=5",
    '<a href="javascript:window.__pwned=10">click</a>',
    "</textarea><script>window.__pwned=6</script>",
    '" onmouseover="window.__pwned=7" x="',
    "' onfocus='window.__pwned=8' autofocus='",
    "</title><script>document.title='pwned'</script>",
    '<iframe srcdoc="<script>parent.__pwned=9</script>"></iframe>',
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned=11>",
    "<!--<img src=x onerror=window.__pwned=13>-->",
    "]]><script>window.__pwned=14</script>",
    "\u202egnp.exe<script>window.__pwned=15</script>",
    "\uff1cscript\uff1ewindow.__pwned=16\uff1c/script\uff1e",
    "<scr\u200dipt>window.__pwned=25</scr\u200dipt>",
    "&lt;script&gt;window.__pwned=17&lt;/script&gt;",
    '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=18">',
    '<base href="javascript:/"><link rel=stylesheet href=//evil.example/x.css>',
    "{{constructor.constructor('window.__pwned=19')()}}",
    "<style>*{display:none}</style>",
]
CORPUS = " | ".join(PAYLOADS)
SHOWN = sanitize(CORPUS)
"""The corpus as a page must show it: the bidi override written out, the rest as is."""
CALC_FIXED = CALC.replace("a - b", "a + b")
RUN_ID = '<img src=x onerror="window.__pwned=20">'
FILE = 'x"><img src=x onerror="window.__pwned=21">.py'
INERT = """
const all = [...document.querySelectorAll('*')];
const hrefs = [...document.querySelectorAll('[href]')].map(e => e.getAttribute('href'));
return {
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  scripts: document.scripts.length,
  injected: document.querySelectorAll(
    'img,iframe,object,embed,base,form,input,textarea,style,math,foreignObject,animate,' +
    'video,audio,frame,frameset,button,select,template,noscript,body meta').length,
  handlers: all.filter(e => [...e.attributes].some(a => /^on/i.test(a.name))).length,
  links: document.querySelectorAll('link').length,
  foreign: hrefs.filter(h => !h.startsWith(arguments[0])).length,
  svg: [...document.querySelectorAll('svg *')].filter(e => !['rect', 'title']
    .includes(e.tagName)).length,
  text: document.body.textContent,
};
"""


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    with browser(1200, 900) as d:
        yield d


def inert(driver: WebDriver, base: str, title: str) -> str:
    """Assert nothing on the page ran or was injected; its text."""
    state: dict[str, Any] = driver.execute_script(INERT, urlsplit(base).path)
    assert driver.title == title
    assert state["pwned"] is None
    assert (state["scripts"], state["injected"], state["handlers"]) == (0, 0, 0)
    assert (state["links"], state["foreign"], state["svg"]) == (1, 0, 0)
    logs = [entry["message"] for entry in driver.get_log("browser")]
    assert not [m for m in logs if "Content Security Policy" in m or "pwned" in m], logs
    return str(state["text"])


def fits(driver: WebDriver) -> None:
    width, inner = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]"
    )
    assert width <= inner, (width, inner, driver.current_url)


@pytest.fixture
def recorded(committed_repo: Repo) -> tuple[Repo, str, str]:
    ok, failed = record_two(committed_repo)
    return committed_repo, ok, failed


def test_the_pages_show_real_runs_and_the_stores_hashes(
    driver: WebDriver, recorded: tuple[Repo, str, str]
) -> None:
    repo, ok, failed = recorded
    with served(repo) as inspector:
        driver.get(inspector.url)
        text = inert(driver, inspector.url, "tidegate runs")
        links = driver.find_elements(By.CSS_SELECTOR, "table.runs a")
        assert [a.text for a in links] == [failed, ok]
        assert "succeeded" in text and "failed" in text and "LOGIC" in text

        links[1].click()
        text = inert(driver, inspector.url, f"tidegate run {ok}")
        stored = report(ok)
        (changed,) = stored["changed_files"]
        shas = {
            e.get_attribute("data-side"): e.text
            for e in driver.find_elements(By.CSS_SELECTOR, "#changes article code.sha")
        }
        assert shas == {"before": changed["before_sha256"], "after": changed["after_sha256"]}
        assert driver.find_element(By.CSS_SELECTOR, "#changes h3.path").text == "calc.py"
        diff = driver.find_element(By.CSS_SELECTOR, "#changes pre.diff").text
        assert diff == stored["diff"].rstrip("\n")
        assert stored["diff_sha256"] in text and stored["replay_hash"] in text
        ((replay,),) = query("SELECT replay_hash FROM runs WHERE run_id = ?", (ok,))
        assert replay == stored["replay_hash"]
        verdict = driver.find_element(By.CSS_SELECTOR, "#evidence .verdict").text
        assert verdict == "Checkpoint chain verified."
        ((checkpoints,),) = query("SELECT count(*) FROM checkpoints WHERE run_id = ?", (ok,))
        assert f"checkpoints\n{checkpoints}" in driver.find_element(By.ID, "evidence").text
        phases = driver.find_elements(By.CSS_SELECTOR, "#phases table.phases tr td:first-child")
        stored_phases = query("SELECT phase FROM phase_events WHERE run_id = ? ORDER BY seq", (ok,))
        assert [p.text for p in phases] == [p for (p,) in stored_phases]
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline rect")) == len(phases)
        [proposal] = driver.find_elements(By.CSS_SELECTOR, "#proposals article.proposal")
        kept = repo.git("cat-file", "blob", f"refs/tidegate/keep:{ok}/attempt-1/proposal")
        assert hashlib.sha256(kept.encode()).hexdigest() in proposal.text
        assert proposal.find_element(By.CSS_SELECTOR, "h4.path").text == "calc.py"
        shown = proposal.find_element(By.CSS_SELECTOR, "pre.proposal").text
        assert shown == CALC_FIXED.rstrip("\n")

        driver.find_element(By.LINK_TEXT, "all runs").click()
        driver.find_element(By.LINK_TEXT, failed).click()
        text = inert(driver, inspector.url, f"tidegate run {failed}")
        assert "AssertionError: add is wrong" in driver.find_element(By.ID, "verify").text
        feedback = driver.find_elements(By.CSS_SELECTOR, "#attempts pre.feedback")
        assert [f.text for f in feedback] == [t.rstrip("\n") for t in report(failed)["feedback"]]


def test_a_tampered_chain_is_shown_refused(
    driver: WebDriver, recorded: tuple[Repo, str, str]
) -> None:
    repo, ok, failed = recorded
    edit("UPDATE checkpoints SET event_seq = event_seq + 100 WHERE run_id = ? AND seq = 2", (ok,))
    with served(repo) as inspector:
        driver.get(f"{inspector.url}run/{ok}")
        inert(driver, inspector.url, f"tidegate run {ok}")
        banner = driver.find_element(By.ID, "tampered").text
        assert "REFUSED" in banner and f"checkpoint 2 of run {ok}" in banner
        driver.get(f"{inspector.url}run/{failed}")
        assert not driver.find_elements(By.ID, "tampered")


def test_a_running_run_follows_the_run(driver: WebDriver, recorded: tuple[Repo, str, str]) -> None:
    from tidegate.disk.owners import process_start

    repo, _, failed = recorded
    me = os.getpid()
    edit(
        "UPDATE runs SET status = 'running', pid = ?, pid_start = ?, host = ? WHERE run_id = ?",
        (me, process_start(me), os.uname().nodename, failed),
    )
    with served(repo) as inspector:
        driver.get(f"{inspector.url}run/{failed}")
        assert driver.find_element(By.CSS_SELECTOR, "header .badge").text == "running"
        edit("UPDATE runs SET status = 'failed' WHERE run_id = ?", (failed,))
        WebDriverWait(driver, 15).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "header .badge").text == "failed"
        )
        time.sleep(4)  # no refresh once the run has ended: the page stays put
        assert driver.find_element(By.CSS_SELECTOR, "header .badge").text == "failed"


def test_the_token_is_required(driver: WebDriver, recorded: tuple[Repo, str, str]) -> None:
    repo, ok, _ = recorded
    with served(repo) as inspector:
        root = f"http://127.0.0.1:{inspector.port}"
        for path in ("/", f"/run/{ok}", f"/{inspector.token.swapcase()}/", "/x/style.css"):
            driver.get(root + path)
            assert driver.find_element(By.TAG_NAME, "body").text == "not found", path
            assert ok not in driver.page_source
        driver.get(f"http://localhost:{inspector.port}/{inspector.token}/")
        assert driver.find_element(By.CSS_SELECTOR, "table.runs")


def _model_run(repo: Repo, tmp: Any) -> str:
    """A scripted model run whose tool call's arguments hold the corpus: its id."""
    block = (
        "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    )
    script = {
        "model": "xss-model",
        "turns": [
            {"tool_calls": [{"id": "g1", "name": "workspace_grep",
                             "arguments": {"pattern": "<script>window.__pwned=23</script>"}}]},
            {"text": "Plan: fix add() in calc.py."},
            {"text": block},
        ],
    }  # fmt: skip
    path = tmp / "model.json"
    path.write_text(json.dumps(script))
    res = tidegate_cli(
        "run", "--objective", "Fix add().", "--model", f"scripted:{path}", "--verify", "true",
        "--max-attempts", "1", "--json", cwd=repo.root,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    run_id: str = json.loads(res.stdout)["run_id"]
    return run_id


def _plant(run_id: str) -> None:
    """The corpus in every text field of ``run_id`` a page shows, as sqlite3 edits."""
    stored = report(run_id)
    set_report(
        run_id,
        message=CORPUS,
        notes=[CORPUS],
        feedback=[CORPUS],
        findings=[
            {"message": CORPUS, "path": None, "line": None, "severity": "error", "source": "x"}
        ],
        rejects=[CORPUS],
        verify={**stored["verify"], "command": CORPUS},
    )
    edit("UPDATE runs SET task_id = ?, error_class = ? WHERE run_id = ?", (CORPUS, CORPUS, run_id))
    edit("UPDATE phase_events SET detail = ? WHERE run_id = ? AND phase = 'PLAN'", (CORPUS, run_id))
    ((event,),) = query("SELECT event_json FROM attempts WHERE run_id = ?", (run_id,))
    planted = {**json.loads(event), "failure_phase": CORPUS}
    edit("UPDATE attempts SET event_json = ? WHERE run_id = ?", (json.dumps(planted), run_id))
    # The real call's effects (its grep pattern, a payload, in them) and the corpus added.
    ((effects,),) = query("SELECT effects FROM tool_calls WHERE run_id = ?", (run_id,))
    effects = json.dumps({**json.loads(effects), CORPUS: CORPUS})
    edit(
        "UPDATE tool_calls SET canonical_tool = ?, status = ?, effects = ? WHERE run_id = ?",
        (CORPUS, CORPUS, effects, run_id),
    )
    for seq, kind, payload in query(
        "SELECT seq, kind, payload FROM trace WHERE run_id = ? AND kind IN "
        "('agent.turn', 'tool.requested', 'agent.started')",
        (run_id,),
    ):
        value = json.loads(payload)
        if kind == "agent.turn":
            value["tool_calls"] = [CORPUS]
        elif kind == "tool.requested":
            value["canonical_tool"] = CORPUS
        else:
            value["model"] = CORPUS
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        edit("UPDATE trace SET payload = ? WHERE run_id = ? AND seq = ?", (text, run_id, seq))
    # A run whose id itself is a payload (a copy of the row: the listing links to it).
    columns = [r[1] for r in query("PRAGMA table_info(runs)")]
    names = ", ".join(columns)
    chosen = ", ".join({"run_id": "?", "seq": "seq + 1000"}.get(c, c) for c in columns)
    edit(f"INSERT INTO runs ({names}) SELECT {chosen} FROM runs WHERE run_id = ?", (RUN_ID, run_id))


def _plant_proposal(repo: Repo, run_id: str) -> None:
    """The corpus in every field of attempt 1's kept proposal, and as attempt 2's blob."""
    encoded = base64.b64encode(CORPUS.encode()).decode()
    fields = {
        "search_replace": CORPUS,
        "diff": CORPUS,
        "edits": [
            {"path": CORPUS, "content": encoded, "executable": False},
            {"path": CORPUS, "content": None, "executable": False},
        ],
        "checks": [{"path": CORPUS, "contains": CORPUS}],
    }
    for number, blob in ((1, json.dumps(fields)), (2, CORPUS)):
        oid = repo.git("hash-object", "-w", "--stdin", input=blob.encode()).strip()
        repo.git("update-ref", f"refs/tidegate/runs/{run_id}/attempt-{number}/proposal", oid)


def test_an_xss_corpus_is_shown_as_text(
    driver: WebDriver, committed_repo: Repo, tmp_path: Any
) -> None:
    repo = committed_repo
    repo.write(FILE, "VALUE = 1\n")
    repo.commit_all("a file whose name is markup")
    echo = "echo '<script>window.__pwned=22</script>'; false"
    objective = f"edit-file: {FILE}\nreplace: VALUE = 1\nwith: VALUE = 2\n"
    res = tidegate_cli(
        "run", "--objective", objective, "--verify", echo, "--max-attempts", "1", cwd=repo.root
    )
    assert res.returncode == 1, res.stderr
    ((real,),) = query("SELECT run_id FROM runs ORDER BY seq DESC LIMIT 1")
    planted = _model_run(repo, tmp_path)
    _plant(planted)
    _plant_proposal(repo, planted)

    with served(repo) as inspector:
        driver.get(inspector.url)
        text = inert(driver, inspector.url, "tidegate runs")
        assert SHOWN in text  # the planted error class
        links = {a.text: a for a in driver.find_elements(By.CSS_SELECTOR, "table.runs a")}
        assert set(links) == {RUN_ID, planted, real}
        links[RUN_ID].click()
        text = inert(driver, inspector.url, f"tidegate run {RUN_ID}")
        assert driver.find_element(By.CSS_SELECTOR, "h1 .id").text == RUN_ID

        driver.get(f"{inspector.url}run/{real}")
        text = inert(driver, inspector.url, f"tidegate run {real}")
        assert driver.find_element(By.CSS_SELECTOR, "#changes h3.path").text == FILE
        assert "<script>window.__pwned=22</script>" in driver.find_element(By.ID, "verify").text
        quoted = FILE.replace('"', '\\"')  # as git writes it in the diff's header
        assert driver.find_element(By.CSS_SELECTOR, "#proposals h4.path").text == FILE
        assert quoted in driver.find_element(By.CSS_SELECTOR, "#changes pre.diff").text

        driver.get(f"{inspector.url}run/{planted}")
        text = inert(driver, inspector.url, f"tidegate run {planted}")
        # Message, task, phase detail, attempt record, feedback, VERIFY's command, tool
        # call (tool, status), transcript (turn, request, start), finding, reject, note.
        assert text.count(SHOWN) >= 14, text.count(SHOWN)
        assert "\\u202e" in text and "\u202e" not in text  # the bidi override made visible
        effects = driver.find_element(By.CSS_SELECTOR, "#tools pre.json").text
        assert json.dumps(SHOWN, ensure_ascii=False)[1:-1] in effects
        assert ".:<script>window.__pwned=23</script>" in effects  # the real call's argument
        assert SHOWN in driver.find_element(By.ID, "transcript").text
        # search/replace, diff, two paths, a file's content, a check's two, a raw blob
        assert driver.find_element(By.ID, "proposals").text.count(SHOWN) == 8
        fits(driver)
        driver.set_window_size(390, 844)  # long planted text still fits a phone's width
        try:
            for url in (inspector.url, f"{inspector.url}run/{planted}"):
                driver.get(url)
                fits(driver)
        finally:
            driver.set_window_size(1200, 900)


def test_the_pages_fit_a_phones_width(driver: WebDriver, recorded: tuple[Repo, str, str]) -> None:
    repo, ok, failed = recorded
    set_report(failed, notes=["a-very-long-word-" * 40], message="m" * 500)
    edit("UPDATE phase_events SET detail = ? WHERE run_id = ?", ("/long/path" * 60, failed))
    with served(repo) as inspector:
        driver.set_window_size(390, 844)
        try:
            for url in (inspector.url, f"{inspector.url}run/{ok}", f"{inspector.url}run/{failed}"):
                driver.get(url)
                assert driver.execute_script("return window.innerWidth") <= 390
                fits(driver)
                assert driver.find_element(By.TAG_NAME, "h1").is_displayed()
        finally:
            driver.set_window_size(1200, 900)
