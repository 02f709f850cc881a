"""Host side of programmatic dependent launch (kernels/pdl.py): whether a device uses it.

SONICSAMPLER_PDL=0 in the environment turns it off (both stages then launch as plain kernels), for
comparisons and for drivers or graph tools that mishandle it.
"""
from __future__ import annotations

import os

import torch

from .kernels import INTERPRETED

_ENABLED = os.environ.get("SONICSAMPLER_PDL", "1") not in ("0", "")
_by_device: dict = {}


def uses_pdl(device: torch.device) -> bool:
    """True on a CUDA device of compute capability 9.0 or later, outside the interpreter."""
    if INTERPRETED or not _ENABLED or device.type != "cuda":
        return False
    key = device.index if device.index is not None else torch.cuda.current_device()
    hit = _by_device.get(key)
    if hit is None:
        hit = _by_device[key] = torch.cuda.get_device_capability(key)[0] >= 9
    return hit


def stage2_options(device: torch.device) -> dict:
    """Launch options of a stage 2: the PDL constexpr and, with it, Triton's launch_pdl option."""
    return {"PDL": True, "launch_pdl": True} if uses_pdl(device) else {"PDL": False}
