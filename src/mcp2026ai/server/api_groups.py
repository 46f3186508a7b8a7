"""Management API groups that an operator can switch off (``--disable-api GROUP``), on both transports.

As Triton's ``--http-restricted-api`` / ``--grpc-restricted-protocol`` do for its model-repository and
shared-memory groups, a server may refuse whole groups of management calls, whatever the caller's token:

- ``repository``: load and unload (``/v2/repository/models/...``, gRPC ``RepositoryModelLoad/Unload``,
  vLLM's ``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter``);
- ``shared-memory``: system and CUDA shared memory register, unregister and status;
- ``settings``: changing trace and log settings (HTTP POST; gRPC ``TraceSetting`` / ``LogSettings``,
  which read and change through the same call);
- ``rollouts``: the console's promote, rollback and abort actions.

A refused call gets 403 (PERMISSION_DENIED) with a message naming the flag.
"""

from __future__ import annotations

from collections.abc import Collection

from mcp2026ai.errors import PermissionDeniedError

REPOSITORY = "repository"
SHARED_MEMORY = "shared-memory"
SETTINGS = "settings"
ROLLOUTS = "rollouts"
GROUPS = (REPOSITORY, SHARED_MEMORY, SETTINGS, ROLLOUTS)

_SHM_PREFIXES = ("/v2/systemsharedmemory/", "/v2/cudasharedmemory/")
_GRPC_GROUPS = {
    "RepositoryModelLoad": REPOSITORY,
    "RepositoryModelUnload": REPOSITORY,
    "SystemSharedMemoryStatus": SHARED_MEMORY,
    "SystemSharedMemoryRegister": SHARED_MEMORY,
    "SystemSharedMemoryUnregister": SHARED_MEMORY,
    "CudaSharedMemoryStatus": SHARED_MEMORY,
    "CudaSharedMemoryRegister": SHARED_MEMORY,
    "CudaSharedMemoryUnregister": SHARED_MEMORY,
    "TraceSetting": SETTINGS,
    "LogSettings": SETTINGS,
}


def is_shared_memory_path(path: str) -> bool:
    return path.startswith(_SHM_PREFIXES)


def http_group(path: str, method: str) -> str | None:
    """The management group of an HTTP request, or None."""
    if path.startswith("/v2/repository/models/") or path in ("/v1/load_lora_adapter", "/v1/unload_lora_adapter"):
        return REPOSITORY
    if is_shared_memory_path(path):
        return SHARED_MEMORY
    settings = path in ("/v2/trace/setting", "/v2/logging") or (
        path.startswith("/v2/models/") and path.endswith("/trace/setting")
    )
    if settings and method == "POST":
        return SETTINGS
    if path.startswith("/ui/fragments/rollouts/") and method == "POST":
        return ROLLOUTS
    return None


def grpc_group(method: str) -> str | None:
    """The management group of a full gRPC method name (``/inference.GRPCInferenceService/X``), or None."""
    return _GRPC_GROUPS.get(method.rsplit("/", 1)[-1])


def check_enabled(group: str | None, disabled: Collection[str]) -> None:
    """Raise PermissionDeniedError (403 / PERMISSION_DENIED) when ``group`` is switched off."""
    if group is not None and group in disabled:
        raise PermissionDeniedError(
            f"the {group} API is switched off on this server (started with --disable-api {group}); "
            f"start it without that flag to allow this call"
        )
