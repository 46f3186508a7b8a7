"""The deployment's statistics board (deploy/ray_statistics.py) as a plain object: the sums it answers
as replicas report, replace their reports and stop (the Ray actor around it is exercised in
tests/integration/test_ray_serve.py)."""

from __future__ import annotations

from mcp2026ai.deploy.ray_statistics import StatisticsBoard
from tests.unit.test_worker_statistics import stats


def successes(board: StatisticsBoard) -> int:
    (total,) = board.total()
    return int(total["inference_stats"]["success"]["count"])


def test_the_total_is_the_sum_of_each_replicas_latest_report() -> None:
    board = StatisticsBoard()
    board.report("a@node", [stats("1", 3, 300, last=10)])
    board.report("b@node", [stats("1", 4, 400, last=20)])
    assert successes(board) == 7
    board.report("a@node", [stats("1", 5, 500, last=30)])  # a's counts grew: its latest report counts
    assert successes(board) == 9


def test_a_replica_that_stopped_keeps_its_last_counts_so_totals_never_go_back() -> None:
    board = StatisticsBoard()
    board.report("a@node", [stats("1", 6, 600, last=10)])
    board.report("b@node", [stats("1", 2, 200, last=20)])
    before = successes(board)
    board.report("c@node", [stats("1", 0, 0, last=0)])  # a's replacement starts from zero; a reports no more
    assert successes(board) == before == 8
