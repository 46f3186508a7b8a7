"""overload.py's goodput window: counted while every client was sending, not from the first answer."""

from __future__ import annotations

import pytest
from benchmarks.overload.overload import ok_at, print_all_sending

# the server's 200s so far, sampled every second: nothing until 101 s, then 100 a second
ANSWERED = [(100.0, 0.0), (101.0, 0.0), (102.0, 100.0), (103.0, 200.0), (104.0, 300.0), (105.0, 400.0)]


def test_the_count_of_200s_is_interpolated_between_samples_and_held_outside_them() -> None:
    assert ok_at(ANSWERED, 102.5) == 150.0
    assert ok_at(ANSWERED, 99.0) == 0.0 and ok_at(ANSWERED, 106.0) == 400.0


def test_goodput_counts_from_the_last_client_to_start_sending(capsys: pytest.CaptureFixture[str]) -> None:
    reports = {  # the first client sends from 100.5 s, the last one from 101.0 s; each for 4 s
        "a": {"started_unix": 100.5, "connect_s": 0.2},
        "b": {"started_unix": 101.0, "connect_s": 1.3},
        "c": {"started_unix": 100.8, "connect_s": 0.4},
    }
    print_all_sending(ANSWERED, reports, seconds=4.0, capacity=200.0, higher_capacity=250.0)
    out = capsys.readouterr().out
    assert "took 0.2, 1.3, 0.4 s to open their connections, and started sending within 0.5 s" in out
    # from 101.0 s (the last start) to 104.5 s (the first client's end): 350 answered in 3.5 s
    assert "sending (3.5 s): 100 req/s = 0.50 x capacity (0.40 x the higher" in out
