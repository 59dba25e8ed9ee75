"""The one timer (lineage.measure.timing): call order of interleaved rounds, medians, untimed setup, bad settings."""

from __future__ import annotations

import pytest
import torch

from lineage.measure import timing
from lineage.measure.timing import Timed, interleaved_medians, interleaved_times, median_seconds, repeat_times, timed

CPU = torch.device("cpu")


class FakeClock:
    """Stands in for time.perf_counter: time moves only when a test advances it."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing, "time", fake)
    return fake


def test_timed_returns_the_result_and_the_elapsed_time(clock):
    out, seconds = timed(lambda: clock.advance(0.25) or 42, CPU)
    assert (out, seconds) == (42, 0.25)


def test_interleaved_rounds_run_each_form_its_own_number_of_times():
    calls: list[str] = []
    forms = {"slow": Timed(lambda: calls.append("slow"), 2), "fast": Timed(lambda: calls.append("fast"), 4)}
    times = interleaved_times(forms, CPU, warmup=1)
    assert {name: len(ts) for name, ts in times.items()} == {"slow": 2, "fast": 4}
    # one warm-up each, then rounds: slow runs in the first two rounds only, alternating with fast
    assert calls == ["slow", "fast", "slow", "fast", "slow", "fast", "fast", "fast"]
    assert all(t >= 0 for ts in times.values() for t in ts)


def test_interleaved_rounds_report_each_round_and_keep_the_times_of_an_interrupted_run():
    seen: list[tuple[int, int]] = []
    calls = {"n": 0}

    def run():
        calls["n"] += 1
        if calls["n"] > 2 + 2 * 2:  # the warm-up of both, then two whole rounds; the third round's first call stops
            raise KeyboardInterrupt

    times: dict[str, list[float]] = {}
    forms = {"a": Timed(run, 3), "b": Timed(run, 3)}
    with pytest.raises(KeyboardInterrupt):
        interleaved_times(
            forms, CPU, warmup=1, after_round=lambda done, rounds: seen.append((done, rounds)), times=times
        )
    assert seen == [(1, 3), (2, 3)]
    assert {name: len(ts) for name, ts in times.items()} == {"a": 2, "b": 2}  # the rounds done, kept by the caller
    calls["n"] = -100  # no more interruptions
    assert len(interleaved_times(forms, CPU, after_round=lambda done, rounds: seen.append((done, rounds)))["a"]) == 3
    assert seen[2:] == [(1, 3), (2, 3), (3, 3)]


def test_interleaved_times_and_medians_exclude_the_warmup(clock):
    durations = iter([9.0, 3.0, 1.0, 2.0] * 2)  # warm-up, then three timed runs; twice

    def run():
        clock.advance(next(durations))

    assert interleaved_times({"f": Timed(run, 3)}, CPU, warmup=1) == {"f": [3.0, 1.0, 2.0]}
    assert interleaved_medians({"f": Timed(run, 3)}, CPU, warmup=1) == {"f": 2.0}


def test_median_seconds_without_warmup_times_every_call(clock):
    durations = iter([5.0, 1.0, 4.0])
    assert median_seconds(lambda: clock.advance(next(durations)), CPU, 3, warmup=0) == 4.0


def test_setup_makes_a_fresh_argument_per_call_outside_the_timed_region(clock):
    made: list[list[int]] = []

    def setup():
        clock.advance(100.0)  # a slow setup: must not show in the times
        made.append([])
        return made[-1]

    def run(arg):
        clock.advance(1.0)
        arg.append(1)

    times = repeat_times(run, CPU, 3, warmup=1, setup=setup)
    assert len(made) == 4 and all(arg == [1] for arg in made)  # warm-up + 3 timed calls, each its own argument
    assert times == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "forms, warmup, match",
    [
        ({"f": Timed(lambda: None, 0)}, 1, "repeats of 'f' must be >= 1"),
        ({"f": Timed(lambda: None, 2)}, -1, "warmup must be >= 0"),
    ],
    ids=["no-repeats", "negative-warmup"],
)
def test_bad_settings_are_refused(forms, warmup, match):
    with pytest.raises(ValueError, match=match):
        interleaved_times(forms, CPU, warmup)
