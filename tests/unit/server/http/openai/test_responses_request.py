"""The Responses API request as a text request (server/http/openai/responses_request.py)."""

from __future__ import annotations

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.server.http.openai.responses_request import parse_responses_request


def test_instructions_lead_the_input_messages() -> None:
    parsed = parse_responses_request(
        {
            "model": "m",
            "instructions": "Be brief.",
            "input": [
                {"role": "developer", "content": "No lists."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
            ],
            "max_output_tokens": 5,
            "tool_choice": "auto",
            "store": False,
        }
    )
    request = parsed.text_request({})
    assert request.prompt.messages == (
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "No lists."},
        {"role": "user", "content": "Hi"},
    )
    assert request.sampling["max_tokens"] == 5


@pytest.mark.parametrize(
    ("field", "value"),
    [("previous_response_id", "resp_1"), ("store", True), ("tools", [{"type": "function"}]), ("truncation", "auto")],
)
def test_what_needs_a_store_or_tools_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        parse_responses_request({"model": "m", "input": "Hi", field: value})
    assert raised.value.param == field
