"""The submit window of ``mlsub replay --since/--until`` (``traces.window``): its two
forms, its half-open edges, and a clear error for each way to get it wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_mlsched.errors import InputError
from slurm_mlsched.traces.record import TimeBase
from slurm_mlsched.traces.window import (
    SubmitWindow,
    cut,
    empty_window_error,
    parse_bound,
    submit_window,
)

DAY = 86400.0
# 2017-10-03T00:00:00-07:00 (US Pacific, summer time) in epoch seconds
PACIFIC_OCT_3 = 1507014000.0


def bound(text: str, base: TimeBase = TimeBase.EPOCH, tz: str = "UTC", first: float = 0.0) -> float:
    return parse_bound(text, "--since", time_base=base, tz=tz, first_submit=first)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("+7d", 7 * DAY), ("+12h", 12 * 3600.0), ("+30m", 1800.0), ("+90s", 90.0),
     ("+3600", 3600.0), ("+1.5d", 1.5 * DAY), ("+ 2h", 7200.0), ("+0", 0.0)],
)  # fmt: skip
def test_a_duration_counts_from_the_first_submit(text: str, seconds: float) -> None:
    assert bound(text, first=1000.0) == 1000.0 + seconds
    assert bound(text, TimeBase.OFFSET, first=50.0) == 50.0 + seconds


def test_a_date_without_a_zone_is_read_in_the_traces_zone() -> None:
    assert bound("2017-10-03", tz="America/Los_Angeles") == PACIFIC_OCT_3
    assert bound("2017-10-03T00:00:00-07:00") == PACIFIC_OCT_3
    assert bound("2017-10-03T07:00:00Z", tz="America/Los_Angeles") == PACIFIC_OCT_3
    assert bound("2017-10-03") == PACIFIC_OCT_3 - 7 * 3600.0  # UTC midnight


@pytest.mark.parametrize("text", ["yesterday", "-7d", "+7w", "+d", "2017-13-01", "", "7d"])
def test_anything_else_names_the_option_and_shows_both_forms(text: str) -> None:
    with pytest.raises(InputError) as err:
        bound(text)
    assert "--since" in err.value.message and repr(text) in err.value.message
    assert "+7d" in (err.value.hint or "") and "ISO 8601" in (err.value.hint or "")


def test_a_date_on_a_trace_without_dates_says_to_use_a_duration() -> None:
    with pytest.raises(InputError) as err:
        bound("2017-10-03", TimeBase.OFFSET)
    assert "offsets from its own start" in err.value.message
    assert "+7d" in (err.value.hint or "")


def test_until_must_be_later_than_since() -> None:
    for since, until in (("+2h", "+1h"), ("+1h", "+1h")):
        with pytest.raises(InputError) as err:
            submit_window(since, until, time_base=TimeBase.OFFSET, tz="UTC", submits=[0.0])
        assert "--until" in err.value.message and "--since" in err.value.message


def test_no_window_without_either_bound() -> None:
    assert submit_window(None, None, time_base=TimeBase.EPOCH, tz="UTC", submits=[1.0]) is None


def test_the_window_is_half_open_and_counts_what_it_leaves_out() -> None:
    submits = [0.0, 3599.0, 3600.0, 5000.0, 7199.9, 7200.0, 9000.0]
    window = submit_window("+1h", "+2h", time_base=TimeBase.OFFSET, tz="UTC", submits=submits)
    assert window is not None and window.text == "--since +1h --until +2h"
    kept = cut(window, submits)
    assert kept.kept == (2, 3, 4) and (kept.before, kept.after, kept.outside) == (2, 2, 4)


def test_one_sided_windows() -> None:
    submits = [10.0, 20.0, 30.0]
    since = submit_window("+10s", None, time_base=TimeBase.OFFSET, tz="UTC", submits=submits)
    until = submit_window(None, "+10s", time_base=TimeBase.OFFSET, tz="UTC", submits=submits)
    assert since is not None and until is not None
    assert cut(since, submits).kept == (1, 2) and cut(until, submits).kept == (0,)
    assert until.text == "--until +10s"


@given(
    st.lists(st.floats(0, 1e6), min_size=1, max_size=40),
    st.floats(0, 1e6),
    st.floats(1, 1e6),
)
def test_consecutive_windows_split_a_trace_with_no_job_in_both(
    submits: list[float], split: float, width: float
) -> None:
    first = min(submits)
    a = SubmitWindow(None, first + split, "a")
    b = SubmitWindow(first + split, first + split + width, "b")
    c = SubmitWindow(first + split + width, None, "c")
    sets = [set(cut(w, submits).kept) for w in (a, b, c)]
    assert sets[0].isdisjoint(sets[1]) and sets[1].isdisjoint(sets[2])
    assert sets[0] | sets[1] | sets[2] == set(range(len(submits)))
    for w, kept in zip((a, b, c), sets, strict=True):
        whole = cut(w, submits)
        assert len(whole.kept) + whole.outside == len(submits)
        assert kept == {i for i, s in enumerate(submits) if w.holds(s)}


def test_an_empty_window_says_when_the_jobs_were_submitted() -> None:
    window = SubmitWindow(PACIFIC_OCT_3 + 400 * DAY, None, "--since 2018-11-07")
    err = empty_window_error(
        window, [PACIFIC_OCT_3, PACIFIC_OCT_3 + DAY], TimeBase.EPOCH, "America/Los_Angeles", "t.csv"
    )
    assert "no job of t.csv was submitted in the window --since 2018-11-07" in err.message
    assert "2017-10-03T00:00:00-07:00 to 2017-10-04T00:00:00-07:00" in err.message
    assert "America/Los_Angeles" in (err.hint or "")
    offset = empty_window_error(SubmitWindow(None, 5.0, "--until +5s"), [10.0, 20.0],
                                TimeBase.OFFSET, "UTC", "w.csv")  # fmt: skip
    assert "from +10 s to +20 s" in offset.message
