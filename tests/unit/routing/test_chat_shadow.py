"""Chat shadow statistics per prompt (routing/chat_shadow.py): greedy token agreement, TTFT and ITL
deltas, merged across flushes from the catalog."""

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.chat_shadow import (
    ChatAnswer,
    ChatShadowKey,
    ChatShadowReporter,
    chat_shadow_report,
    prompt_key,
)
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.stream_window import StreamSample


def answer(tokens: tuple[int, ...], ttft_ms: float, itl_ms: float, outcome: Outcome = Outcome.OK) -> ChatAnswer:
    return ChatAnswer(StreamSample(outcome, 0.0, 1.0, ttft_ms, (itl_ms,) * 3, len(tokens)), tokens)


def test_agreement_counts_positions_up_to_the_longer_answer_and_deltas_are_shadow_minus_primary() -> None:
    reporter = ChatShadowReporter(catalog=None)  # type: ignore[arg-type]
    key = ChatShadowKey("smollm2", "1.0.0", "2.0.0", prompt_key([1, 2, 3]))
    reporter.add(key, answer((5, 6, 7, 8), 100, 20), answer((5, 6, 9), 130, 25), greedy=True)
    reporter.add(key, answer((5, 6), 100, 20), answer((5, 6), 90, 15), greedy=True)
    summary = reporter.take().stats[key].summary()
    assert summary["token_agreement"] == 4 / 6  # 2 of 4, then 2 of 2
    assert summary["identical_rate"] == 0.5
    assert summary["ttft_delta_ms_mean"] == 10.0  # (+30 - 10) / 2
    assert summary["itl_delta_ms_mean"] == 0.0  # (+5 - 5) / 2


def test_sampled_answers_are_not_compared_and_a_failed_shadow_is_an_error() -> None:
    reporter = ChatShadowReporter(catalog=None)  # type: ignore[arg-type]
    key = ChatShadowKey("smollm2", "1.0.0", "2.0.0", "abc:3")
    reporter.add(key, answer((1,), 10, 1), answer((2,), 10, 1), greedy=False)
    reporter.add(key, answer((1,), 10, 1), answer((), 10, 1, Outcome.SERVER_ERROR), greedy=True)
    summary = reporter.take().stats[key].summary()
    assert summary["token_agreement"] is None and summary["shadow_error_rate"] == 0.5


def test_the_report_merges_flushes_per_prompt(registry: ModelRegistry) -> None:
    reporter = ChatShadowReporter(registry.catalog)
    name = registry.model_names()[0]
    version = registry.versions(name)[0].version
    key = ChatShadowKey(name, version, version, prompt_key([7, 8]))
    for _ in range(2):
        reporter.add(key, answer((1, 2), 10, 1), answer((1, 2), 12, 1), greedy=True)
        assert reporter.flush() == 1
    rows = chat_shadow_report(registry.catalog, name)
    assert len(rows) == 1 and rows[0]["requests"] == 2 and rows[0]["token_agreement"] == 1.0
    assert rows[0]["prompt"] == key.prompt and rows[0]["prompt"].endswith(":2")
