"""Stream one chat answer from a running `mcp serve` through the official OpenAI client."""

from __future__ import annotations

import argparse
import sys

import openai


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--question", default="Give me three short tips for writing clean Python code.")
    args = parser.parse_args()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{args.http_port}/v1", api_key="not-needed")
    models = {model.id: model for model in client.models.list()}
    print(f"models: {list(models)}")
    defaults = (models[args.model].model_extra or {}).get("sampling_defaults") if args.model in models else None
    print(f"{args.model} sampling defaults (what a request that sets nothing gets): {defaults}")
    print(f"user: {args.question}\nassistant: ", end="", flush=True)
    stream = client.chat.completions.create(  # no sampling fields: the model's defaults apply
        model=args.model,
        messages=[{"role": "user", "content": args.question}],
        seed=7,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.choices:
            print(chunk.choices[0].delta.content or "", end="", flush=True)
        elif chunk.usage is not None:
            usage = chunk.usage
            print(f"\n[usage: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
