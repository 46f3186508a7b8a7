"""The backend factory the servers use: plain files, signature-verified bytes, or decrypted bytes.

With trusted keys (``--require-signed``) every version is read once, hashed and checked against a
trusted Ed25519 signature, and the session is built from those very bytes: nothing can swap the
file between the check and the load. An artifact encrypted at rest has no plaintext file, so it is
decrypted into memory and loaded the same way. Otherwise the file (or, with a planner, the
policy's cached optimized graph) is loaded directly.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mcp2026ai.errors import SignatureError
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.signing import read_verified_artifact
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.cpu_affinity import usable_physical_cores
from mcp2026ai.runtime.plan import DEFAULT_PLAN, DEFAULT_RUNTIME, Plan
from mcp2026ai.runtime.triton_python import BlsGateway
from mcp2026ai.security.trust import TrustedKeys
from mcp2026ai.serving.python_models import is_python_model, python_model_backend

if TYPE_CHECKING:
    from mcp2026ai.policy.orchestrator import PolicyOrchestrator

log = logging.getLogger(__name__)


def serving_default_plan(runtime: str = DEFAULT_RUNTIME, cores: int | None = None, lone_session: bool = False) -> Plan:
    """The plan a model is served with when none was measured for it (``mcp serve --no-policy``, an
    encrypted artifact with no stored plan): the runtime's own default, one session, so the model's
    weights are held once.

    With ``lone_session`` (host tuning's ``lone_session_plan``, part of the latency preset: opt-in,
    scheduling/host.py), onnxruntime on several cores instead runs one single-threaded instance per
    physical core, and a lone batch on a second session of all of them (``Plan.lone_threads``,
    runtime/lone.py): concurrent batches run side by side without the barrier of one multi-threaded
    run, at which each thread spins for any partner the machine's other processes preempted. Under
    the co-located overload (benchmarks/overload/overload.py, the clients on the same two cores)
    goodput was 0.71-0.85 x capacity (median 0.78) against 0.57-0.72 (0.66) with one session
    (docs/notebook/benchmarks.md, "Single-threaded instances by default"). The price: the weights are held
    twice (two sessions), and under overload a batch takes one core twice as long, so the
    latency-critical tail grows by about a batch (client p99 median 51 -> 62 ms there). The policy
    may choose such a plan too, within the contract's ``resources.memory_mb`` (it measures each
    plan's memory).

    Other runtimes keep their default (OpenVINO's threads sleep when they wait), as does a process
    confined to one core.
    """
    cores = cores if cores is not None else usable_physical_cores()
    if not lone_session or runtime != DEFAULT_RUNTIME or cores < 2:
        return DEFAULT_PLAN.model_copy(update={"runtime": runtime})
    return Plan(runtime=runtime, intra_op_threads=1, instances=cores, lone_threads=cores, measured=False)


class ArtifactBackends:
    """``BackendFactory``: builds an unloaded backend for a registered version (blocking)."""

    def __init__(
        self,
        registry: ModelRegistry,
        trusted_keys: TrustedKeys | None = None,
        planner: PolicyOrchestrator | None = None,
        runtime: str | None = None,
        lone_session: bool = False,
    ) -> None:
        self.registry = registry
        self.trusted_keys = trusted_keys
        self.planner = planner
        self.default_plan = serving_default_plan(runtime or DEFAULT_RUNTIME, lone_session=lone_session)
        self.bls = BlsGateway()
        """Where a Triton Python model's BLS calls go: the data plane binds it (dataplane/bls.py)."""

    def __call__(self, record: ModelVersion) -> Backend:
        if is_python_model(record):  # user code: loaded from the verified bytes, never planned or profiled
            return python_model_backend(self.registry, record, self._read(record), self.bls)
        encrypted = self.registry.store.is_encrypted(record.digest)
        if self.trusted_keys is None and not encrypted:
            if self.planner is not None:
                return self.planner.backend_for(record)
            return create_backend(self.registry.artifact_path(record), record.signature, self.default_plan)
        # Check the requested version before anything (the planner's profiler included) opens it.
        verified = self._read(record)
        plan, source = self._plan(record, measure=not encrypted)
        data = verified if source.digest == record.digest else self._read(source)
        return create_backend(data, source.signature, plan, label=source.ref)

    def _read(self, record: ModelVersion) -> bytes:
        if self.trusted_keys is not None:
            return read_verified_artifact(self.registry, record, self.trusted_keys)
        return self.registry.artifact_bytes(record)

    def _plan(self, record: ModelVersion, measure: bool) -> tuple[Plan, ModelVersion]:
        """The plan to run and the version whose artifact it runs (a quantized child, maybe).

        The policy's optimized-graph cache is not used here: it is not covered by the signature, and
        for an encrypted artifact it would be plaintext on disk. An encrypted artifact is not measured
        either (the profiler reads files): it runs its stored plan, or the default one.
        """
        if self.planner is None:
            return self.default_plan, record
        stored = self.planner.ensure_plan(record) if measure else self.planner.stored(record)
        if stored is None:
            log.info("%s: no stored plan for an encrypted artifact, running the default plan", record.ref)
            return self.default_plan, record
        variant = stored.variant
        if variant.digest == record.digest:
            return stored.plan, record
        return stored.plan, self._own_variant(
            record, self.registry.resolve(variant.name or record.name, variant.version)
        )

    def _own_variant(self, record: ModelVersion, source: ModelVersion) -> ModelVersion:
        """The plan's variant, refused when it is another model's artifact.

        A plan is a catalog annotation outside every signature: a plan of model B naming model A would
        run A's (validly signed) artifact under B's name. A variant must be a version of this model
        (signed under its name) or, without ``--require-signed``, a child that names this version as
        its parent; under ``--require-signed`` the parent link (also unsigned) is not enough.
        """
        if source.name == record.name:
            return source
        declared_child = source.parent in {record.ref, record.digest}
        if self.trusted_keys is not None or not declared_child:
            raise SignatureError(
                f"{record.ref}: its stored plan runs {source.ref}, another model's artifact; refused "
                f"(a model runs only its own versions: plan it again with `mcp policy plan --model {record.name}`)"
            )
        return source
