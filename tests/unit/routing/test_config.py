from pathlib import Path

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.routing.config import AnalysisSpec, BreakerSpec, RolloutConfig, load_rollouts, parse_rollout


def test_defaults_follow_flagger_and_the_issue() -> None:
    analysis, breaker = AnalysisSpec(), BreakerSpec()
    assert (analysis.interval_s, analysis.max_5xx_rate, analysis.max_error_rate, analysis.max_p95_ms) == (
        60.0,
        0.035,
        0.05,
        800.0,
    )
    assert (breaker.failure_rate, breaker.min_requests, breaker.window_s) == (0.5, 20, 10.0)


def test_versions_are_normalized_to_semver() -> None:
    config = parse_rollout({"name": "clf", "stable": "1", "canary": "1.1", "weight": 20, "shadow": 2})
    assert (config.stable, config.canary, config.shadow) == ("1.0.0", "1.1.0", "2.0.0")
    assert config.canary_active


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"name": "clf", "weight": 120, "canary": "1.1.0"},
            "weight: Input should be less than or equal to 100 (got 120)",
        ),
        ({"name": "clf", "weight": 20}, "weight 20 needs a canary version"),
        ({"name": "clf", "stable": "1.0.0", "canary": "1.0"}, "canary 1.0.0 is also the stable version"),
        ({"name": "clf", "shadow_percent": 5}, "shadow_percent 5 needs a shadow version"),
        ({"name": "clf", "canary": "one"}, "canary: version 'one' is not a semantic version like 1.2.0 (got 'one')"),
        ({"name": "clf", "fallback_model": "clf"}, "fallback_model 'clf' is the model itself"),
        ({"name": "bad name!"}, "name: model name 'bad name!' is invalid"),
        (
            {"name": "clf", "breaker": {"failure_rate": 1.5}},
            "breaker.failure_rate: Input should be less than 1 (got 1.5)",
        ),
        ({"name": "clf", "wieght": 3}, "wieght: Extra inputs are not permitted (got 3)"),
    ],
)
def test_invalid_documents_name_field_and_value(document: dict[str, object], expected: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        parse_rollout(document, "r.yaml")
    assert str(caught.value).startswith("r.yaml: ")
    assert expected in str(caught.value)


def test_stable_only_drops_the_canary_and_a_shadow_that_was_the_canary() -> None:
    config = RolloutConfig(name="clf", stable="1.0.0", canary="1.1.0", weight=30, shadow="1.1.0", shadow_percent=10)
    stable_only = config.stable_only()
    assert (stable_only.canary, stable_only.weight, stable_only.shadow, stable_only.shadow_percent) == (
        None,
        0,
        None,
        0.0,
    )
    other_shadow = config.model_copy(update={"shadow": "1.2.0"}).stable_only()
    assert (other_shadow.shadow, other_shadow.shadow_percent) == ("1.2.0", 10.0)


def test_load_one_mapping_and_fill_the_name(tmp_path: Path) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text("canary: 1.1.0\nweight: 20\nanalysis:\n  interval_s: 30\n")
    [config] = load_rollouts(path, name="clf")
    assert (config.name, config.canary, config.weight, config.analysis.interval_s) == ("clf", "1.1.0", 20, 30.0)


def test_load_a_list_names_the_bad_item(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.yaml"
    path.write_text("- name: a\n- name: b\n  weight: -1\n  canary: 1.0.0\n")
    with pytest.raises(InvalidArgumentError, match=r"rollouts.yaml\[1\]: weight: .*\(got -1\)"):
        load_rollouts(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: [unclosed\n", "not valid YAML (line 2"),
        ("", "empty rollout file"),
        ("- 3\n", "expected a mapping, got int"),
        ("name: other\n", "name: 'other' differs from --name 'clf'"),
    ],
)
def test_file_errors_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(InvalidArgumentError) as caught:
        load_rollouts(path, name="clf")
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="rollout file not found"):
        load_rollouts(tmp_path / "nope.yaml")
