"""OpenAI's Batch API: ``/v1/files`` (purpose ``batch``) and ``/v1/batches`` (routes.py), input
lines checked before a batch starts (lines.py), state kept in the registry's catalog and artifact
stores (store.py), lines run in the best-effort class through the same route handlers as
synchronous calls (runner.py)."""
