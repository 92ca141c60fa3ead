"""Stand-in devices, so that every branch a device takes runs where that device is not: a GPU
for CI and for planning release-scale runs without one (`FakeCuda`), and a CPU host of a given
memory (`FakeHost`).

`FakeCuda` answers every question `kalma.models.runtime.Device` asks as an 80 GB card would,
while the tensors stay on the CPU: dtype, attention, budgets from free memory, placement checks,
static-cache generation, out-of-memory recovery, the first batch's measured peak. It answers
through the raw readings (`cuda_memory`), so `Device.free()`'s own arithmetic runs. Its allocator
is honest: it counts the live bytes of every tensor made inside any batch for as long as it lives
(`LiveBytes`), across batches, so that memory a failed batch still holds shows at the next; a
batch's peak is what it adds; with `limit` set it raises CUDA's out-of-memory error when the live
bytes would pass it: a fault where a real card would have one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kalma.models.memory import LiveBytes
from kalma.models.runtime import Device, Peak

H100 = "NVIDIA H100 80GB HBM3"
GIB = 2**30


class Limited(LiveBytes):
    """Live bytes, and CUDA's out-of-memory error past `limit`."""

    def __init__(self, limit: int | None):
        super().__init__()
        self.limit = limit

    def _track(self, storage: Any, given: set[int]) -> None:
        super()._track(storage, given)
        if self.limit is not None and self.live > self.limit:
            import torch

            raise torch.cuda.OutOfMemoryError(f"CUDA out of memory (stand-in): {self.live} bytes live past {self.limit}")


class FakeCuda(Device):
    def __init__(self, total: int = 80 * GIB, name: str = H100, held: int = 0, limit: int | None = None):
        self.total_bytes, self.gpu, self.held, self.limit = total, name, held, limit
        self.loaded: list[int] = []  # weight bytes of each model placed on it
        self.emptied = 0  # calls to empty the allocator's cache
        self.ooms = 0
        self.counter = Limited(limit)  # one for the card's life: live bytes are counted across batches
        self.held_at_start: list[int] = []  # live bytes when each batch began (what earlier ones left)

    def available(self) -> bool:
        return True

    def torch_device(self) -> str:
        return "cpu"

    def name(self) -> str:
        return self.gpu

    def names(self) -> list[str]:
        return [self.gpu]

    def cuda_version(self) -> str | None:
        return "12.8"

    def cuda_memory(self) -> tuple[int, int, int, int]:
        """(free, total, reserved, allocated) as the driver and allocator would say: reserved
        blocks the allocator keeps cached count as used by the driver, free to torch."""
        allocated = self.held + sum(self.loaded) + self.counter.live
        reserved = allocated + self.cached
        return max(0, self.total_bytes - reserved), self.total_bytes, reserved, allocated

    cached = 0  # bytes the allocator would keep in its cache, unused (a test sets it)

    def empty_cache(self) -> None:
        self.emptied += 1

    @contextmanager
    def batch(self) -> Iterator[Peak]:
        found = Peak()
        counter = self.counter
        before = counter.live
        self.held_at_start.append(before)
        counter.peak = before
        try:
            with counter:
                yield found
        except Exception as exc:
            self.ooms += self.is_oom(exc)
            raise
        found.peak = counter.peak - before

    def reset_peak(self) -> None:
        pass

    def load_kwargs(self) -> dict[str, Any]:
        return {}

    def placement(self, model: Any) -> dict[str, str]:
        """As `device_map="auto"` would place it: on the card while it fits, the rest on the CPU."""
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        if weights <= self.free():
            self.loaded.append(weights)
            return {"": "cuda:0"}
        return {"model.embed_tokens": "cuda:0", "model.layers": "cpu", "lm_head": "cpu"}


class FakeHost(Device):
    """A CPU host with `available` bytes of memory free: the plans a machine of that size makes."""

    def __init__(self, available: int):
        self.available_bytes = available

    def available(self) -> bool:
        return False

    def host_available(self) -> int:
        return self.available_bytes
