"""Which devices this machine offers, and which one a notebook should train on."""
import torch


def available_devices() -> list[torch.device]:
    """Every device the checks run on: the CPU always, then CUDA and MPS when present."""
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append(torch.device("mps"))
    return devices


def pick_device() -> torch.device:
    """The fastest device here: CUDA, then MPS, then the CPU."""
    return available_devices()[-1]


def supported_dtypes(device: torch.device) -> list[torch.dtype]:
    """Floating dtypes the checks try on `device` (MPS has no float64)."""
    return [torch.float32] if device.type == "mps" else [torch.float32, torch.float64]
