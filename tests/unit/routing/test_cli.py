"""``mcp rollout`` and ``mcp shadow report`` end to end on a temporary MCP_HOME with real models."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.diff import Observation, compare
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.report import ShadowKey, ShadowReporter
from mcp2026ai.routing.store import RolloutStore

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "mcp-home"))
    monkeypatch.setenv("COLUMNS", "200")
    context.settings.cache_clear()
    yield tmp_path / "mcp-home"
    context.settings.cache_clear()


@pytest.fixture
def mcp(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.argv", ["mcp", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        captured = capsys.readouterr()
        return int(exited.value.code or 0), captured.out, captured.err

    return run


@pytest.fixture
def models(mcp: Run, make_model: Callable[[int], Path]) -> None:
    for seed, (name, version, stage) in enumerate(
        [
            ("clf", "1.0.0", "production"),
            ("clf", "1.1.0", "dev"),
            ("clf", "1.2.0", "dev"),
            ("clf-small", "1.0.0", "dev"),
        ]
    ):
        code, _, err = mcp("model", "register", "--name", name, "--path", str(make_model(seed)), "--version", version,
                           "--stage", stage)  # fmt: skip
        assert code == 0, err


def show(mcp: Run) -> dict[str, object]:
    code, out, err = mcp("rollout", "show", "--name", "clf", "--json")
    assert code == 0, err
    return dict(json.loads(out))


@pytest.mark.usefixtures("models")
def test_set_show_clear_round_trip(mcp: Run) -> None:
    code, out, _ = mcp("rollout", "set", "--name", "clf", "--canary", "1.1.0", "--weight", "20")
    assert code == 0 and "stable 1.0.0, canary 1.1.0 at 20%" in out
    code, out, _ = mcp("rollout", "set", "--name", "clf", "--shadow", "1.2.0", "--shadow-percent", "10",
                       "--fallback-model", "clf-small", "--interval", "30")  # fmt: skip
    assert code == 0
    rollout = show(mcp)["rollout"]
    assert isinstance(rollout, dict)
    assert (rollout["stable"], rollout["canary"], rollout["weight"]) == ("1.0.0", "1.1.0", 20)  # kept
    assert (rollout["shadow"], rollout["shadow_percent"], rollout["fallback_model"]) == ("1.2.0", 10.0, "clf-small")
    assert rollout["analysis"]["interval_s"] == 30.0 and rollout["analysis"]["max_5xx_rate"] == 0.035

    code, out, _ = mcp("rollout", "show", "--name", "clf")
    assert code == 0 and "canary 1.1.0 at 20%" in out and "interval_s: 30.0" in out

    assert mcp("rollout", "clear", "--name", "clf")[0] == 0
    assert show(mcp)["rollout"] is None
    assert "no rollout" in mcp("rollout", "show", "--name", "clf")[1]


@pytest.mark.usefixtures("models")
def test_set_from_file(mcp: Run, tmp_path: Path) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text("name: clf\ncanary: 1.2.0\nweight: 5\nbreaker:\n  cooldown_s: 2\n")
    code, out, err = mcp("rollout", "set", "--file", str(path), "--json")
    assert code == 0, err
    [stored] = json.loads(out)
    assert (stored["stable"], stored["canary"], stored["breaker"]["cooldown_s"]) == ("1.0.0", "1.2.0", 2.0)


@pytest.mark.usefixtures("models")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--canary", "7.0.0", "--weight", "5"], "canary: model 'clf' has no version 7.0.0"),
        (["--canary", "1.1.0", "--weight", "120"], "rollout of clf: weight: Input should be less than or equal to 100"),
        (["--weight", "10"], "weight 10 needs a canary version"),
        (["--fallback-model", "ghost"], "fallback_model: unknown model 'ghost'"),
    ],
)
def test_errors_are_one_line_exit_2(mcp: Run, args: list[str], message: str) -> None:
    code, _, err = mcp("rollout", "set", "--name", "clf", *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.usefixtures("models")
def test_bad_file_names_file_field_value(mcp: Run, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: clf\ncanary: 1.1.0\nweight: 101\n")
    code, _, err = mcp("rollout", "set", "--file", str(path))
    assert code == 2 and f"{path}: weight:" in err and "(got 101)" in err


def test_unknown_model(mcp: Run) -> None:
    code, _, err = mcp("rollout", "show", "--name", "nope")
    assert code == 2 and "unknown model 'nope'" in err


@pytest.mark.usefixtures("models")
def test_show_lists_rollbacks(mcp: Run, home: Path) -> None:
    store = RolloutStore(ModelRegistry(home))
    store.record_decision("clf", "1.1.0", "rollback", chosen="clf:1.0.0", reason="p95 latency 900.0 ms > 800 ms")
    assert show(mcp)["rollbacks"][0]["reason"] == "p95 latency 900.0 ms > 800 ms"  # type: ignore[index]
    assert "p95 latency 900.0 ms" in mcp("rollout", "show", "--name", "clf")[1]


@pytest.mark.usefixtures("models")
def test_shadow_report(mcp: Run, home: Path) -> None:
    assert "no shadow diffs" in mcp("shadow", "report", "--name", "clf")[1]
    reporter = ShadowReporter(ModelRegistry(home).catalog)
    scores = np.array([[0.1, 0.9], [0.8, 0.2]], dtype=np.float32)
    shifted = np.array([[0.2, 0.8], [0.4, 0.6]], dtype=np.float32)
    diff = compare(Observation(Outcome.OK, 5.0, {"p": scores}), Observation(Outcome.OK, 6.0, {"p": shifted}))
    reporter.add(ShadowKey("clf", "1.0.0", "1.2.0"), diff)
    reporter.flush()
    code, out, _ = mcp("shadow", "report", "--name", "clf", "--json")
    [row] = json.loads(out)
    assert code == 0 and row["requests"] == 1 and row["top1_agreement"] == 0.5
    assert row["max_abs_diff"] == pytest.approx(0.4)
    code, out, _ = mcp("shadow", "report", "--name", "clf")
    assert code == 0 and "1.2.0" in out and "0.5" in out
