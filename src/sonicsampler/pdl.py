"""Host side of programmatic dependent launch (kernels/pdl.py): whether a launch pair uses it.

Whether it pays off depends on the batch. Stage 2's programs start as soon as stage 1's last wave is on
the GPU, each on whichever SM frees room first, and wait there; with many of them, several can land on
the same few SMs and then run packed while other SMs idle, where a plain launch spreads them one per
SM. Measured on an H100 at V = 151936 (runs 44-45, PDL off -> on):
- top-k: 13.9 -> 13.3 us at 1 row, 21.3 -> 20.7 at 32, but 27.1 -> 28.7 at 64 and 39.0 -> 43.0 at 128;
- sampler: 20.5 -> 19.4 at 1 row, 39.3 -> 38.5 at 32, 91.8 -> 90.0 at 128 (a gain at every size);
- verification (γ = 3): 32.1 -> 31.2 at B = 1 (4 rows), 41.1 -> 39.7 at B = 4 (16 rows).
After stage 2 got shorter (runs 51-52), one process with PDL at 64 rows timed 24.3 us against 25.1
without (run 57), but alternating runs of the same rows in one call gave 26.2 with against 25.3
without, twice (run 58): the top-k keeps its bound of 32.
So each launch pair uses PDL up to the stage-2 program count it was measured to gain at (MAX_ROWS).

SONICSAMPLER_PDL_MAX_ROWS in the environment replaces those bounds (0 turns PDL off everywhere), for
comparisons and for drivers or graph tools that mishandle it.
"""
from __future__ import annotations

import os

import torch

from .kernels import INTERPRETED

MAX_ROWS = {"topk": 32, "sampler": 128}   # the sampler's bound also serves verification's B*(γ+1) rows
_OVERRIDE = os.environ.get("SONICSAMPLER_PDL_MAX_ROWS", "").strip()
if _OVERRIDE and not _OVERRIDE.isdigit():
    raise ValueError(f"SONICSAMPLER_PDL_MAX_ROWS must be a non-negative integer (0 turns PDL off), got {_OVERRIDE!r}")
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


def stage2_options(device: torch.device, programs: int, pair: str) -> dict:
    """Options of the stage 2 of `pair` ("topk" or "sampler") over `programs` programs: the PDL constexpr
    (stage 1 takes it too) and, with it, Triton's launch_pdl option."""
    limit = int(_OVERRIDE) if _OVERRIDE else MAX_ROWS[pair]
    if programs <= limit and uses_pdl(device):
        return {"PDL": True, "launch_pdl": True}
    return {"PDL": False}
