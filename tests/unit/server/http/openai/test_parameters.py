"""What happens to each OpenAI request field (server/http/openai/parameters.py, codec.py)."""

from __future__ import annotations

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.server.http.openai.codec import ChatCompletionRequest, CompletionRequest, parse_request
from mcp2026ai.serving.limits import GenerationLimits

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
LIMITS = GenerationLimits()


@pytest.mark.parametrize(
    ("field", "value"),
    [("audio", {}), ("functions", []), ("max_token", 5), ("store", True), ("modalities", ["audio"])],
)
def test_a_field_not_honoured_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        parse_request(ChatCompletionRequest, {**CHAT, field: value}, LIMITS)
    assert raised.value.param == field


def test_tools_belong_to_chat_only() -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        parse_request(CompletionRequest, {"model": "m", "prompt": "Hi", "tools": []}, LIMITS)
    assert raised.value.param == "tools"


def test_priority_and_service_tier_become_the_request_priority() -> None:
    assert (
        parse_request(ChatCompletionRequest, {**CHAT, "service_tier": "priority"}, LIMITS).text_request({}).priority
        == -1
    )
    chat = parse_request(ChatCompletionRequest, {**CHAT, "service_tier": "flex", "priority": -3}, LIMITS)
    assert chat.text_request({}).priority == -3  # priority, when set, wins


def test_each_prompt_of_a_list_is_its_own_request() -> None:
    parsed = parse_request(CompletionRequest, {"model": "m", "prompt": ["a", "b"], "echo": True, "logprobs": 2}, LIMITS)
    requests = parsed.text_requests({})
    assert [request.prompt.text for request in requests] == ["a", "b"]
    assert requests[0].sampling["prompt_logprobs"] == 2
    ids = parse_request(CompletionRequest, {"model": "m", "prompt": [[1, 2], [3]]}, LIMITS).prompts()
    assert [prompt.token_ids for prompt in ids] == [(1, 2), (3,)]
    with pytest.raises(InvalidArgumentError) as raised:
        parse_request(CompletionRequest, {"model": "m", "prompt": []}, LIMITS).prompts()
    assert raised.value.param == "prompt"


def test_stream_options_beyond_include_usage_are_refused() -> None:
    for options in ({"include_usage": True, "continuous_usage_stats": True}, {"include_obfuscation": True}):
        with pytest.raises(InvalidArgumentError) as raised:
            parse_request(ChatCompletionRequest, {**CHAT, "stream": True, "stream_options": options}, LIMITS)
        assert raised.value.param == "stream_options"
    options = {"include_obfuscation": False, "include_usage": True}
    assert parse_request(
        ChatCompletionRequest, {**CHAT, "stream": True, "stream_options": options}, LIMITS
    ).include_usage
