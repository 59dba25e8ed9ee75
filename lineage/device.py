"""Where the numbers are computed: CUDA if present, then Apple MPS, then CPU; ``LINEAGE_DEVICE`` overrides."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import torch

ENV_VAR = "LINEAGE_DEVICE"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def parse_device(choice: str, where: str = ENV_VAR) -> torch.device:
    """The device named by ``choice`` ("cpu", "cuda", "cuda:1", "mps"), which must be present on this machine:
    an unavailable choice is an error naming ``where`` it came from, never a silent fallback."""
    try:
        dev = torch.device(choice)
    except RuntimeError as exc:
        raise ValueError(f"{where}={choice!r} is not a device name; use cpu, cuda, cuda:N or mps") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{where}={choice!r} but CUDA is not available on this machine")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"{where}={choice!r} but this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not _mps_available():
        raise ValueError(f"{where}={choice!r} but MPS is not available on this machine")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{where}={choice!r}: use cpu, cuda, cuda:N or mps")
    return dev


def get_device() -> torch.device:
    """The device every live computation runs on.

    ``LINEAGE_DEVICE`` (e.g. "cpu", "cuda", "cuda:1", "mps") wins when set; an unavailable choice is an
    error rather than a silent fallback, so a misconfigured demo says so.
    """
    choice = os.environ.get(ENV_VAR, "").strip()
    if choice:
        return parse_device(choice)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


@dataclass(frozen=True)
class DeviceInfo:
    type: str  # "cuda" | "mps" | "cpu"
    name: str  # GPU model, or "cpu"
    threads: int  # torch intra-op threads (the CPU's share of the work)

    @property
    def label(self) -> str:
        if self.type == "cpu":
            return f"running on cpu, {self.threads} thread{'s' if self.threads != 1 else ''}"
        return f"running on {self.type}: {self.name}"


def device_info(device: torch.device | None = None) -> DeviceInfo:
    """Describe a device for display ("running on cuda: NVIDIA H200" / "running on cpu, 2 threads")."""
    dev = device or get_device()
    name = "cpu"
    if dev.type == "cuda":
        name = torch.cuda.get_device_name(dev)
    elif dev.type == "mps":
        name = "Apple GPU (MPS)"
    return DeviceInfo(type=dev.type, name=name, threads=torch.get_num_threads())


def cpu_model() -> str:
    """The CPU's model name as the OS gives it ("Intel(R) Xeon(R) Processor", "AMD EPYC 7B13"), or "unknown CPU".

    Timings on a CPU say little without it: the same code's share of the matrix-product speed has differed by 2x
    between two 2-core cloud machines, and a denormal's slow path costs far more on some CPUs than on others."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work so timings measure the work, not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
