"""Text generation: the engine's transport-free parts (KV cache blocks, scheduling, sampling)."""
