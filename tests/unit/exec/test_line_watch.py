"""``exec.streams.LineWatch``: the latest line of a command's output, told at most every
interval, looking only at the end of each read."""

from __future__ import annotations

from tidegate.exec.streams import LINE_BYTES, LineWatch


def _watch(interval: float = 0.0) -> tuple[LineWatch, list[str]]:
    told: list[str] = []
    return LineWatch(told.append, interval), told


def test_the_latest_non_blank_line_of_either_stream() -> None:
    watch, told = _watch()
    for data, line in [
        (b"step 1\n", "step 1"),
        (b"step 2\nstep 3\n\n\n", "step 3"),
        (b"collecting ", "collecting "),
        (b"... 12 items", "collecting ... 12 items"),  # the open line goes on
        (b"\n", "collecting ... 12 items"),
        (b"next", "next"),  # a closed line is not continued
        (b" 10%\r 20%\r", "20%"),  # a carriage return ends a line too
        (b"\n   \n", "20%"),
    ]:
        watch.seen(data)
        watch.tick(0.0, force=True)
        assert (told[-1] if told else None).strip() == line.strip(), (data, told)  # type: ignore[union-attr]


def test_at_most_once_per_interval_and_only_when_changed() -> None:
    watch, told = _watch(0.1)
    watch.seen(b"a\n")
    assert watch.wait(5.0) == 0.0
    watch.tick(5.0)
    watch.seen(b"b\n")
    assert watch.wait(5.05) is not None and 0.04 < watch.wait(5.05) <= 0.05  # type: ignore[operator]
    watch.tick(5.05)
    assert told == ["a"]
    watch.tick(5.11)
    assert told == ["a", "b"]
    watch.tick(9.0)
    assert told == ["a", "b"] and watch.wait(9.0) is None


def test_a_large_read_costs_a_window_and_the_line_is_bounded() -> None:
    watch, told = _watch()
    watch.seen(b"x" * (5 * LINE_BYTES) + b"\nlast line\n")
    watch.tick(0.0)
    assert told == ["last line"]
    watch.seen(b"y" * (3 * LINE_BYTES))
    watch.tick(1.0)
    assert told[-1] == "y" * LINE_BYTES
    watch.seen(b"\n" + "é".encode() * 10 + b"\xff\n")
    watch.tick(2.0)
    assert told[-1] == "é" * 10 + "\ufffd"
