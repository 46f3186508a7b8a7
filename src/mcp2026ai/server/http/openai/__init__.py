"""The OpenAI-compatible API: routes (decode, call the generation use case, encode), codec, errors."""

from mcp2026ai.server.http.openai.routes import openai_routes

__all__ = ["openai_routes"]
