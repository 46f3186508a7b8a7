"""Runtime backends behind the Backend protocol, found by name in the catalog."""

from mcp2026ai.runtime.base import Backend, BackendClass, Tensors
from mcp2026ai.runtime.catalog import backend_class, create_backend, installed_runtimes
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan, Provider

__all__ = [
    "DEFAULT_PLAN",
    "Backend",
    "BackendClass",
    "Plan",
    "Provider",
    "Tensors",
    "backend_class",
    "create_backend",
    "installed_runtimes",
]
