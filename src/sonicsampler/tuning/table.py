"""Measured launch tables (tables/<kind>_<arch>.json, written by the benchmarks/tune_*.py scripts on a GPU
of that architecture) and the rule by which a shape picks its entry."""
from __future__ import annotations

import functools
import json
import math
import warnings
from pathlib import Path

import torch

_TABLES = Path(__file__).parent / "tables"


def arch(device: torch.device) -> str | None:
    if device.type != "cuda":
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm{major}{minor}"


_TUNE_SCRIPTS = {"sample": "benchmarks/tune_sampler.py", "topk": "benchmarks/tune_topk.py"}


@functools.lru_cache(maxsize=None)
def entries(kind: str, arch_name: str) -> tuple:
    """The table's entries (cached); none, with a warning once per kind and architecture, where this
    GPU architecture has no measured table: the launches then take a default configuration, correct
    but not tuned, and the caller should know it."""
    path = _TABLES / f"{kind}_{arch_name}.json"
    if not path.exists():
        warnings.warn(f"sonicsampler: no measured {kind} launch table for {arch_name}; a default configuration "
                      f"is used (correct, not tuned): {_TUNE_SCRIPTS.get(kind, 'the tune script')} measures one",
                      RuntimeWarning, stacklevel=2)
        return ()
    return tuple(json.loads(path.read_text())["entries"])


@functools.lru_cache(maxsize=4096)
def _nearest(kind: str, arch_name: str, vocab: int, rows: int) -> dict | None:
    table = entries(kind, arch_name)
    if not table:
        return None
    v_best = min({e["max_vocab"] for e in table}, key=lambda b: abs(math.log(b / vocab)))
    bucket = [e for e in table if e["max_vocab"] == v_best]
    return next((e for e in bucket if rows <= e["max_rows"]), bucket[-1])


def nearest_entry(kind: str, device: torch.device, vocab: int, rows: int) -> dict | None:
    """The entry of the nearest vocabulary (in log scale) and the smallest row bound >= rows (the
    largest bound if rows exceeds them all); None without a table for this device."""
    a = arch(torch.device(device))
    return _nearest(kind, a, vocab, rows) if a else None
