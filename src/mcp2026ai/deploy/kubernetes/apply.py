"""``mcp deploy kubernetes --apply``: kubectl applies the rendered manifests when a cluster answers."""

from __future__ import annotations

import shutil
import subprocess
from enum import StrEnum
from pathlib import Path

from mcp2026ai.deploy.kubernetes.crd import CRD_NAME
from mcp2026ai.errors import UnavailableError

TIMEOUT_S = 60


class Flavour(StrEnum):
    PLAIN = "plain"
    KSERVE = "kserve"


def kubectl_steps(out: Path, flavour: Flavour) -> list[list[str]]:
    """The kubectl calls, in order: the CRD (and its establishment) before the resource using it."""
    workloads = out / ("kserve" if flavour is Flavour.KSERVE else "kubernetes")
    return [
        ["apply", "-f", str(out / "crd" / "modelservice-crd.yaml")],
        ["wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=30s"],
        ["apply", "-f", str(workloads)],
        ["apply", "-f", str(out / "crd" / "modelservice.yaml")],
    ]


def apply(out: Path, flavour: Flavour, context: str | None) -> list[str]:
    """Run the steps with kubectl; returns kubectl's output lines. UnavailableError, in one line, when
    kubectl is missing or the cluster does not answer."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise UnavailableError(f"kubectl not found on PATH: the manifests are in {out}; apply them with kubectl")
    base = [kubectl, *(["--context", context] if context else [])]
    reach = _run([*base, "cluster-info", "--request-timeout=5s"])
    if reach.returncode != 0:
        where = f"context {context!r}" if context else "the current context"
        raise UnavailableError(f"no Kubernetes cluster reachable through {where}: {_last_line(reach)}")
    lines: list[str] = []
    for step in kubectl_steps(out, flavour):
        done = _run([*base, *step])
        if done.returncode != 0:
            raise UnavailableError(f"kubectl {' '.join(step[:2])} failed: {_last_line(done)}")
        lines += done.stdout.strip().splitlines()
    return lines


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", f"timed out after {TIMEOUT_S} s")


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
