"""The image: a multi-stage Dockerfile whose builder installs the mcp2026ai wheel into a virtual
environment and whose runtime stage runs ``mcp serve`` as a non-root user on the registry export."""

from __future__ import annotations

import json

from mcp2026ai.deploy.kubernetes.export import EXPORT_DIR
from mcp2026ai.deploy.kubernetes.hardening import INSECURE_NOTE, image_env, serve_flags
from mcp2026ai.deploy.kubernetes.options import GRPC_PORT, HTTP_PORT, Target

UID = 10001
HOME = "/home/mcp"
VENV = "/opt/mcp2026ai"
MCP_HOME = f"{HOME}/{EXPORT_DIR}"
SCRATCH_HOME = f"{HOME}/scratch"
SHARED_STORES_EXTRAS = "s3,postgres"
"""MCP_HOME on shared stores: the pod's scratch space (an emptyDir is mounted there)."""
WHEELS_DIR = "dist"
DRAIN_TIMEOUT_S = 30


def serve_command(target: Target, http_port: int = HTTP_PORT, grpc_port: int = GRPC_PORT) -> list[str]:
    """``mcp serve`` for the deployed model on every interface, with its security flags: the image's
    entrypoint (``--auth`` unless rendered ``--insecure``)."""
    return [
        "mcp", "serve", "--name", target.model, "--host", "0.0.0.0",
        "--port", str(http_port), "--grpc-port", str(grpc_port), "--drain-timeout", str(DRAIN_TIMEOUT_S),
        *serve_flags(target.security),
    ]  # fmt: skip


def render_dockerfile(target: Target, base_image: str, wheel_name: str) -> str:
    entrypoint = json.dumps(serve_command(target))
    package = f"/tmp/{WHEELS_DIR}/{wheel_name}"
    if target.stores_secret is not None:
        package = f"'{package}[{SHARED_STORES_EXTRAS}]'"
    if target.stores_secret is not None:  # no registry in the image: a scratch MCP_HOME
        registry = f"RUN mkdir -p {SCRATCH_HOME} && chown {UID}:{UID} {SCRATCH_HOME}"
        home, holds = SCRATCH_HOME, f"the wheel; the model comes from the shared stores (Secret {target.stores_secret})"
    else:
        registry = f"COPY --chown={UID}:{UID} {EXPORT_DIR}/ {MCP_HOME}/"
        home, holds = MCP_HOME, "the wheel and the registry export"
    security_env = "".join(f" \\\n    {name}={value}" for name, value in image_env(target.security).items())
    warning = f"# {INSECURE_NOTE}\n" if target.security.insecure else ""
    return f"""\
# syntax=docker/dockerfile:1
# {target.model}:{target.version} on mcp2026ai, rendered by `mcp deploy kubernetes`.
{warning}# Build from this folder (it holds {holds}):
#   docker build -t {target.image} .
ARG BASE_IMAGE={base_image}

FROM ${{BASE_IMAGE}} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY {WHEELS_DIR}/{wheel_name} /tmp/{WHEELS_DIR}/
RUN python -m venv {VENV} \\
 && {VENV}/bin/pip install {package}

FROM ${{BASE_IMAGE}} AS runtime
RUN groupadd --system --gid {UID} mcp \\
 && useradd --system --uid {UID} --gid {UID} --home-dir {HOME} --create-home --shell /usr/sbin/nologin mcp
COPY --from=builder {VENV} {VENV}
{registry}
ENV PATH={VENV}/bin:$PATH \\
    MCP_HOME={home} \\
    PYTHONUNBUFFERED=1{security_env}
USER {UID}:{UID}
WORKDIR {HOME}
EXPOSE {HTTP_PORT} {GRPC_PORT}
ENTRYPOINT {entrypoint}
"""


def dockerignore(with_export: bool = True) -> str:
    """Only the wheel and the export (if any) go into the build context."""
    return f"*\n!{WHEELS_DIR}/\n" + (f"!{EXPORT_DIR}/\n" if with_export else "")
