"""Triton python models served: what the python backend and a BLS hop cost."""
