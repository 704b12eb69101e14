"""Grading the way SWE-bench grades: a test log to per-test statuses, and those statuses
to the instance's verdict, with the `swebench` package's rules (pure functions, no I/O).

The parsers are the package's ``parse_log_pytest``, ``parse_log_django`` and
``parse_log_sympy``; the rules its ``grading`` module's (swebench 5):

* a test passes when its status is ``PASSED`` or ``XFAIL``;
* a PASS_TO_PASS test is also kept when ``SKIPPED`` (not a regression); a FAIL_TO_PASS
  test that is skipped or missing has failed;
* a truncated parametrized id (more ``[`` than ``]``) prefix-matches the ids in the log
  when those all agree on pass-or-fail;
* the log counts only between the start and end markers; no parsed result and no sign
  the suite ran, or a non-zero exit with no failure in the log, is a log that does not
  describe a run (swebench: the patch did not apply);
* resolved: every FAIL_TO_PASS and PASS_TO_PASS test passes; partially resolved: some
  but not all FAIL_TO_PASS tests pass and every PASS_TO_PASS test does; else unresolved.

``tests/integration/gym/test_swe_crosscheck.py`` grades the same logs with the
package's own functions where it is installed (the ``gym`` extra) and asserts equal
verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
EXIT_CODE = ">>>>> Test Exit Code"

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
_STATUSES = (FAILED, PASSED, SKIPPED, ERROR, XFAIL)

RESOLVED = "resolved"
PARTIAL = "partially resolved"
UNRESOLVED = "unresolved"
HARNESS_ERROR = "error"
EMPTY_PATCH = "empty patch"

StatusMap = dict[str, str]


def parse_pytest(log: str, name: Callable[[str], str] = str) -> StatusMap:
    """``pytest -rA`` summary lines: ``STATUS test_id`` (``name`` rewrites the id)."""
    statuses: StatusMap = {}
    for line in log.split("\n"):
        if any(line.startswith(s) for s in _STATUSES):
            if line.startswith(FAILED):
                line = line.replace(" - ", " ")
            words = line.split()
            if len(words) <= 1:
                continue
            if words[0] == SKIPPED and re.match(r"^\[\d+\]$", words[1]):
                continue  # "SKIPPED [N] path:line: reason": N is not a test
            statuses[name(words[1])] = words[0]
    return statuses


def _option_id(test: str) -> str:
    """``parse_log_pytest_options``: a parameter that is an absolute path keeps only its
    last part (``t[/tmp/x/a.txt]`` is ``t[/a.txt]``), so ids do not depend on the machine."""
    found = re.search(r"(.*?)\[(.*)\]", test)
    if not found:
        return test
    main, option = found.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def parse_pytest_options(log: str) -> StatusMap:
    """requests, pydicom, pylint: pytest's lines, absolute-path parameters shortened."""
    return parse_pytest(log, _option_id)


def parse_matplotlib(log: str) -> StatusMap:
    """matplotlib: pytest's lines, ``MouseButton.LEFT``/``RIGHT`` read as 1 and 3."""
    return parse_pytest(log.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3"))


_ESCAPES = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def parse_pytest_v2(log: str) -> StatusMap:
    """astropy, scikit-learn, sphinx: colour codes stripped, an id may hold spaces, and
    an older pytest's ``test_id STATUS`` lines count too."""
    statuses: StatusMap = {}
    for raw in log.split("\n"):
        line = re.sub(r"\[(\d+)m", "", raw).translate(_ESCAPES)
        if any(line.startswith(s) for s in _STATUSES):
            words = (line.split(" - ", 1)[0] if line.startswith(FAILED) else line).split()
            if len(words) >= 2 and not (words[0] == SKIPPED and re.match(r"^\[\d+\]$", words[1])):
                statuses[" ".join(words[1:])] = words[0]
        elif any(line.endswith(s) for s in _STATUSES):
            words = line.split()
            if len(words) >= 2:
                statuses[" ".join(words[:-1])] = words[-1]
    return statuses


def parse_seaborn(log: str) -> StatusMap:
    """seaborn: ``FAILED id``, ``PASSED id`` and ``id PASSED ...`` lines."""
    statuses: StatusMap = {}
    for line in log.split("\n"):
        words = line.split()
        if len(words) < 2:
            continue
        if line.startswith(FAILED):
            statuses[words[1]] = FAILED
        elif f" {PASSED} " in line:
            if words[1] == PASSED:
                statuses[words[0]] = PASSED
        elif line.startswith(PASSED):
            statuses[words[1]] = PASSED
    return statuses


_DJANGO_STALLED = (
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
)


def parse_django(log: str) -> StatusMap:
    """Django's ``runtests.py --verbosity 2`` lines: ``test (module.Class) ... ok``."""
    statuses: StatusMap = {}
    previous = None
    for line in (raw.strip() for raw in log.split("\n")):
        if "--version is equivalent to version" in line:
            statuses["--version is equivalent to version"] = PASSED
        if " ... " in line:
            previous = line.split(" ... ")[0]
        for suffix in (" ... ok", " ... OK", " ...  OK"):
            if line.endswith(suffix):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()
                statuses[line.rsplit(suffix, 1)[0]] = PASSED
                break
        if " ... skipped" in line:
            statuses[line.split(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            statuses[line.split(" ... FAIL")[0]] = FAILED
        if line.startswith("FAIL:"):
            statuses[line.split()[1].strip()] = FAILED
        if line.endswith(" ... ERROR"):
            statuses[line.split(" ... ERROR")[0]] = ERROR
        if line.startswith("ERROR:"):
            statuses[line.split()[1].strip()] = ERROR
        if line.lstrip().startswith("ok") and previous is not None:
            statuses[previous] = PASSED
    for pattern in _DJANGO_STALLED:
        for match in re.finditer(pattern, log, re.MULTILINE):
            statuses[match.group(1)] = PASSED
    return statuses


def parse_sympy(log: str) -> StatusMap:
    """sympy's ``bin/test -C --verbose`` lines: ``test_x ok`` / ``F`` / ``E``."""
    statuses: StatusMap = {}
    for match in re.findall(r"(_*) (.*)\.py:(.*) (_*)", log):
        statuses[f"{match[1]}.py:{match[2]}"] = FAILED
    for line in (raw.strip() for raw in log.split("\n")):
        if line.startswith("test_"):
            for end, status in ((" E", ERROR), (" F", FAILED), (" ok", PASSED)):
                if line.endswith(end):
                    statuses[line.split()[0]] = status
    return statuses


PARSERS: dict[str, Callable[[str], StatusMap]] = {
    "pytest": parse_pytest,
    "pytest_options": parse_pytest_options,
    "pytest_v2": parse_pytest_v2,
    "matplotlib": parse_matplotlib,
    "seaborn": parse_seaborn,
    "django": parse_django,
    "sympy": parse_sympy,
}

_SUITE_RAN = re.compile(r"[1-9]\d* passing|Tests:\s+[1-9]\d*|^# tests [1-9]\d*", re.M)


def read_log(log: str, parser: str) -> StatusMap | None:
    """The per-test statuses of a test log written between the markers, or None when the
    log does not describe a run (swebench's ``get_logs_eval`` saying not found)."""
    if START not in log or END not in log:
        return None
    parse = PARSERS[parser]
    statuses = parse(log.split(START)[1].split(END)[0])
    if not statuses:
        statuses = parse(log)
    if not statuses and not _SUITE_RAN.search(log):
        return None
    code = re.search(rf"{re.escape(EXIT_CODE)}:\s*(-?\d+)", log)
    exit_code = int(code.group(1)) if code else None
    if (
        exit_code not in (None, 0)
        and statuses
        and not any(s in (FAILED, ERROR) for s in statuses.values())
    ):
        return None  # the log claims no failure, the runner says otherwise
    return statuses


def _key(test: str, statuses: StatusMap) -> str | None:
    if test in statuses:
        return test
    if test.count("[") > test.count("]"):  # a truncated parametrized id
        matches = [k for k in statuses if k.startswith(test)]
        if matches and len({statuses[k] in (PASSED, XFAIL) for k in matches}) == 1:
            return matches[0]
    return None


def passed(test: str, statuses: StatusMap) -> bool:
    key = _key(test, statuses)
    return key is not None and statuses[key] in (PASSED, XFAIL)


def _maintained(test: str, statuses: StatusMap) -> bool:
    key = _key(test, statuses)
    return passed(test, statuses) or (key is not None and statuses[key] == SKIPPED)


def _failed(test: str, statuses: StatusMap) -> bool:
    key = _key(test, statuses)
    return key is None or statuses[key] in (FAILED, ERROR, SKIPPED)


class TestsStatus(msgspec.Struct, frozen=True):
    """swebench's ``tests_status``: each list's tests that succeeded and failed."""

    fail_to_pass: tuple[tuple[str, ...], tuple[str, ...]]
    pass_to_pass: tuple[tuple[str, ...], tuple[str, ...]]

    def as_json(self) -> dict[str, Any]:
        def side(pair: tuple[tuple[str, ...], tuple[str, ...]]) -> dict[str, list[str]]:
            return {"success": list(pair[0]), "failure": list(pair[1])}

        return {
            "FAIL_TO_PASS": side(self.fail_to_pass),
            "PASS_TO_PASS": side(self.pass_to_pass),
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        }


def split_tests(
    statuses: StatusMap, fail_to_pass: tuple[str, ...], pass_to_pass: tuple[str, ...]
) -> TestsStatus:
    def split(
        tests: tuple[str, ...], ok: Callable[[str, StatusMap], bool]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        good = tuple(t for t in tests if ok(t, statuses))
        bad = tuple(t for t in tests if not ok(t, statuses) and _failed(t, statuses))
        return good, bad

    return TestsStatus(split(fail_to_pass, passed), split(pass_to_pass, _maintained))


def resolution(status: TestsStatus) -> str:
    """``resolved``, ``partially resolved`` or ``unresolved`` (swebench's
    ``RESOLVED_FULL``, ``RESOLVED_PARTIAL``, ``RESOLVED_NO``)."""

    def rate(pair: tuple[tuple[str, ...], tuple[str, ...]]) -> float:
        total = len(pair[0]) + len(pair[1])
        return 1.0 if total == 0 else len(pair[0]) / total

    f2p, p2p = rate(status.fail_to_pass), rate(status.pass_to_pass)
    if f2p == 1 and p2p == 1:
        return RESOLVED
    if 0 < f2p < 1 and p2p == 1:
        return PARTIAL
    return UNRESOLVED


_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'")


def missing_modules(log: str) -> set[str]:
    """The top-level modules a test log says could not be imported."""
    return {m.split(".")[0] for m in _MISSING_MODULE.findall(log)}


def harness_failure(
    log: str, statuses: StatusMap | None, tests: tuple[str, ...], candidates: frozenset[str]
) -> str | None:
    """Why the run says nothing about the candidate, or None: the log does not describe a
    run, or no listed test passed while the log names a missing module that the candidate
    cannot have made missing (not among ``candidates``: the modules its patch imports
    anew or removed)."""
    if statuses is None:
        return "the test log does not describe a test run (no results between the markers)"
    if any(passed(t, statuses) for t in tests):
        return None
    foreign = sorted(missing_modules(log) - candidates)
    if foreign:
        return f"the environment lacks module(s) {', '.join(foreign)}: every test failed"
    return None


_IMPORT = re.compile(r"^\+\s*(?:from\s+([\w]+)|import\s+([\w]+))", re.M)


def imported_anew(patch: str) -> set[str]:
    """The top-level modules a patch's added lines import."""
    return {a or b for a, b in _IMPORT.findall(patch)}
