"""Host side of programmatic dependent launch (kernels/pdl.py): whether a launch pair uses it.

PDL pays off for small batches only. Stage 2's programs start as soon as stage 1's last wave is on the
GPU, each on whichever SM frees room first, and wait there; with many of them, several land on the
same few SMs and then run packed while other SMs idle, where a plain launch spreads them one per SM.
Run 44 (H100, top-k at V = 151936): 13.9 -> 13.3 us at 1 row and 21.3 -> 20.7 at 32 rows with PDL,
but 27.1 -> 28.7 at 64 and 39.0 -> 43.0 at 128. So a pair uses PDL up to MAX_ROWS stage-2 programs.

SONICSAMPLER_PDL_MAX_ROWS in the environment sets that bound (0 turns PDL off everywhere), for
comparisons and for drivers or graph tools that mishandle it.
"""
from __future__ import annotations

import os

import torch

from .kernels import INTERPRETED

MAX_ROWS = int(os.environ.get("SONICSAMPLER_PDL_MAX_ROWS", "32"))
_by_device: dict = {}


def uses_pdl(device: torch.device) -> bool:
    """True on a CUDA device of compute capability 9.0 or later, outside the interpreter."""
    if INTERPRETED or device.type != "cuda":
        return False
    key = device.index if device.index is not None else torch.cuda.current_device()
    hit = _by_device.get(key)
    if hit is None:
        hit = _by_device[key] = torch.cuda.get_device_capability(key)[0] >= 9
    return hit


def stage2_options(device: torch.device, programs: int) -> dict:
    """Options of a stage 2 of `programs` programs: the PDL constexpr (stage 1 takes it too) and, with
    it, Triton's launch_pdl option."""
    if programs <= MAX_ROWS and uses_pdl(device):
        return {"PDL": True, "launch_pdl": True}
    return {"PDL": False}
