"""Text generation: aiperf against OpenAI-compatible peers, and A/Bs of the engine's features."""
