"""Resource vectors: the types r ∈ R = {gpu, cpu, mem} of MODEL.md §1 (memory in MiB)."""

from __future__ import annotations

from dataclasses import dataclass

#: The resource types, in the order used by every array in the core.
RESOURCE_NAMES: tuple[str, ...] = ("gpu", "cpu", "mem")


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each resource type: GPUs, CPUs, memory (MiB)."""

    gpu: float = 0.0
    cpu: float = 0.0
    mem: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (float(self.gpu), float(self.cpu), float(self.mem))

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.gpu + other.gpu, self.cpu + other.cpu, self.mem + other.mem)

    def scaled(self, factor: float) -> Resources:
        return Resources(self.gpu * factor, self.cpu * factor, self.mem * factor)

    def fits_in(self, capacity: Resources, eps: float = 1e-9) -> bool:
        return all(a <= c + eps for a, c in zip(self.as_tuple(), capacity.as_tuple(), strict=True))

    def is_zero(self) -> bool:
        return not any(self.as_tuple())

    def as_dict(self) -> dict[str, float]:
        return dict(zip(RESOURCE_NAMES, self.as_tuple(), strict=True))
