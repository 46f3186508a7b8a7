"""One tool call and one structured answer from a running `mcp serve`, through the official OpenAI client:
``tool_choice`` forces a call to a function (constrained decoding, so even a 135M model calls it right),
and ``chat.completions.parse`` gets a Pydantic object back from a JSON-schema response_format."""

from __future__ import annotations

import argparse
import sys

import openai
from pydantic import BaseModel, Field


class City(BaseModel):
    name: str = Field(max_length=24)
    country: str = Field(max_length=24)
    population_millions: int = Field(ge=0, le=40)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--model", default="smollm2")
    args = parser.parse_args()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{args.http_port}/v1", api_key="not-needed")
    question = "What is the weather in Paris?"
    answer = client.chat.completions.create(
        model=args.model,
        messages=[{"role": "user", "content": question}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=60,
        temperature=0,
    )
    choice = answer.choices[0]
    call = choice.message.tool_calls[0]
    print(f"user: {question}\ntool call: {call.function.name}({call.function.arguments})  [{choice.finish_reason}]")
    parsed = client.chat.completions.parse(
        model=args.model,
        messages=[{"role": "user", "content": "Describe Tokyo."}],
        response_format=City,
        max_tokens=80,
        temperature=0,
    )
    print(f"structured answer: {parsed.choices[0].message.parsed!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
