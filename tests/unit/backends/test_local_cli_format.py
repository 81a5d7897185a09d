"""The CLI's pure formatting: ages as kubectl prints them, durations as ``trainop wait`` reads them."""

from __future__ import annotations

import pytest

from trainop.cli.format import DurationError, format_age, parse_duration

MIN, HOUR, DAY = 60, 3600, 86400


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        pytest.param(-3, "0s", id="a clock a little behind: never negative"),
        pytest.param(42.9, "42s", id="seconds, truncated"),
        pytest.param(119, "119s", id="seconds up to 2 minutes"),
        pytest.param(5 * MIN + 3, "5m3s", id="minutes and seconds below 10 minutes"),
        pytest.param(7 * MIN, "7m", id="whole minutes"),
        pytest.param(47 * MIN + 59, "47m", id="minutes below 3 hours"),
        pytest.param(3 * HOUR + 20 * MIN, "3h20m", id="hours and minutes below 8 hours"),
        pytest.param(5 * HOUR, "5h", id="whole hours"),
        pytest.param(30 * HOUR + 59 * MIN, "30h", id="hours below 2 days"),
        pytest.param(2 * DAY + 4 * HOUR, "2d4h", id="days and hours below 8 days"),
        pytest.param(30 * DAY + 5 * HOUR, "30d", id="days below 2 years"),
        pytest.param(800 * DAY, "2y70d", id="years and days below 8 years"),
        pytest.param(9 * 365 * DAY + 3 * DAY, "9y", id="years"),
    ],
)
def test_ages_read_like_kubectl(seconds: float, want: str) -> None:
    assert format_age(seconds) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("90", 90.0, id="bare seconds"),
        pytest.param("30s", 30.0, id="seconds"),
        pytest.param("1h30m", 5400.0, id="hours and minutes"),
        pytest.param("250ms", 0.25, id="milliseconds"),
    ],
)
def test_durations(text: str, want: float) -> None:
    assert parse_duration(text) == want


def test_a_bad_duration_says_what_to_write() -> None:
    with pytest.raises(DurationError) as err:
        parse_duration("soon")
    assert str(err.value) == '"soon" is not a duration; use e.g. 30s, 10m or 1h'
