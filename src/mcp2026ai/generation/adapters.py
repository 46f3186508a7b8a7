"""The LoRA adapters an engine holds: which decoder slot each occupies, loaded and unloaded at run time.

An adapter is known by its key (the serving layer uses the version's ``name:version``). Loading
writes its weights into a free slot of the decoder's buffers (``runtime/lora_weights.py``); a request
that names it runs with that slot (its :class:`~mcp2026ai.generation.jobs.Job` carries it into every
step plan). Unloading makes the key unknown at once (new requests: 404) and frees the slot once no
request that took it is waiting, running or preempted: the engine thread calls :meth:`AdapterSlots.reap`
between steps with the slots still in use.

Each load gets a fresh prefix-cache root, so the KV of a prompt under one adapter (or an earlier
load under the same key) is never served to another.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from itertools import count

from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.ir.lora_adapter import AdapterWeights
from mcp2026ai.runtime.lora_weights import LoraStacks


class AdapterSlots:
    """Adapter keys -> decoder slots, bounded by ``--max-loras`` and ``--max-lora-rank``."""

    def __init__(self, stacks: LoraStacks) -> None:
        self.stacks = stacks
        self._slots: dict[str, int] = {}
        self._roots: dict[str, int] = {}
        self._free = list(range(stacks.layout.slots - 1, -1, -1))
        self._closing: dict[int, str] = {}
        self._serial = count(1)
        self._lock = threading.Lock()

    @property
    def max_loras(self) -> int:
        return self.stacks.layout.slots

    @property
    def max_rank(self) -> int:
        return self.stacks.layout.rank

    def load(self, key: str, adapter: AdapterWeights) -> int:
        """Write ``adapter`` into a free slot under ``key`` (a key already loaded is replaced: it takes a new
        slot, the old one is freed when its requests end). InvalidArgumentError when every slot is taken."""
        if adapter.rank > self.max_rank:
            raise InvalidArgumentError(f"adapter {key!r} has rank {adapter.rank}, over --max-lora-rank {self.max_rank}")
        with self._lock:
            if not self._free:
                loaded = ", ".join(sorted(self._slots)) or "none"
                closing = f"; {len(self._closing)} still finishing requests after an unload" if self._closing else ""
                raise InvalidArgumentError(
                    f"cannot load adapter {key!r}: --max-loras {self.max_loras} adapters are loaded "
                    f"({loaded}{closing}); unload one first"
                )
            slot = self._free.pop()
        self.stacks.write(slot, adapter)  # a free slot: no request selects it while it is written
        with self._lock:
            previous = self._slots.get(key)
            if previous is not None:
                self._closing[previous] = key
            self._slots[key] = slot
            self._roots[key] = hash(("lora", key, next(self._serial)))
        return slot

    def unload(self, key: str) -> None:
        """``key`` is unknown from now on; its slot is freed once its requests have ended."""
        with self._lock:
            slot = self._slots.pop(key, None)
            self._roots.pop(key, None)
            if slot is None:
                raise NotFoundError(f"adapter {key!r} is not loaded")
            self._closing[slot] = key

    def take(self, key: str) -> tuple[int, int]:
        """(slot, prefix-cache root) of a loaded adapter, for a request that names it."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                raise NotFoundError(f"adapter {key!r} is not loaded")
            return slot, self._roots[key]

    def loaded(self) -> list[str]:
        with self._lock:
            return sorted(self._slots)

    def reap(self, in_use: Collection[int]) -> None:
        """Free the unloaded adapters' slots that no request uses any more (the engine thread, between steps)."""
        if not self._closing:
            return
        with self._lock:
            done = [slot for slot in self._closing if slot not in in_use]
            for slot in done:
                del self._closing[slot]
        for slot in done:
            self.stacks.clear(slot)
            with self._lock:
                self._free.append(slot)
