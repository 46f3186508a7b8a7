"""Serving: the model versions loaded in this process (backend + executor), kept in step with the
registry and rollouts, and re-planned when their measured latency drifts from the contract."""
