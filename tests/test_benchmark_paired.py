"""The benchmarks' paired ratio: per-round ratios, their median and its bootstrap interval."""

import pytest

from benchmarks.paired import paired_ratio


def test_rounds_with_one_ratio_give_an_interval_of_no_width():
    # the machine slows down threefold halfway: every round's own ratio is still 1.05
    baseline = [1.0, 1.0, 1.0, 3.0, 3.0, 3.0]
    side = [1.05 * b for b in baseline]
    ratio = paired_ratio(side, baseline)
    assert ratio.median == pytest.approx(1.05)
    assert (ratio.low, ratio.high) == (pytest.approx(1.05), pytest.approx(1.05))
    assert ratio.verdict(1.1) == "met"


def test_the_interval_holds_the_median_and_decides_the_verdict():
    baseline = [1.0] * 9
    spread = paired_ratio([1.0, 1.3, 1.05, 1.2, 1.1, 0.95, 1.25, 1.15, 1.0], baseline)
    assert spread.low <= spread.median <= spread.high
    assert spread.low < 1.1 < spread.high
    assert spread.verdict(1.1) == "not shown"
    assert paired_ratio([1.3, 1.4, 1.35], [1.0, 1.0, 1.0]).verdict(1.1) == "not met"
    assert paired_ratio([1.04], [1.0]).verdict(1.1) == "not shown", "one round decides nothing"
    assert "paired ratio 1.10" in spread.describe(1.1) and "9 rounds" in spread.describe(1.1)


def test_the_same_runs_give_the_same_interval():
    side, baseline = [1.2, 0.9, 1.1, 1.4, 1.0], [1.0, 1.1, 0.9, 1.0, 1.2]
    assert paired_ratio(side, baseline) == paired_ratio(side, baseline)


def test_unpaired_runs_are_refused():
    with pytest.raises(ValueError):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_ratio([], [])
