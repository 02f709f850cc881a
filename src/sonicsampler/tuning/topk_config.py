"""Launch configuration of the two-stage top-k: chosen from a measured table, or given explicitly.

`tuning/tables/topk_<arch>.json` is written by `benchmarks/tune_topk.py` on a GPU of that architecture:
a list of entries {"max_vocab", "max_rows", "block", "m", "warps1", "warps2", "emit"} measured at those
points (see `topk_config` for how a shape picks one). Without a table (a new architecture, the CPU
interpreter) the heuristic below applies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .table import nearest_entry

# Stage 1's ways of reducing a tile to its best E keys (kernels/topk.py, emit_tile_candidates): a filter
# followed by sorting networks or by all-pairs ranks, or E rounds of maxima without a filter.
STRATEGIES = ("bitonic", "rank", "extract")


@dataclass(frozen=True)
class TopKConfig:
    block: int        # tile size of stage 1 (power of two, <= 65536)
    m: int = 0        # candidate capacity of stage 1's filter (power of two >= 2 * emit); 0 = 4 * emit
    warps1: int = 4   # warps of a stage-1 program
    warps2: int = 4   # warps of a stage-2 program
    emit: int = 32    # keys each tile hands to stage 2 (power of two; capped at k rounded up)
    strategy: str = "bitonic"   # stage 1's tile selection, one of STRATEGIES

    def check(self):
        for name in ("block", "m", "emit"):
            v = getattr(self, name)
            if v and (v & (v - 1)):
                raise ValueError(f"TopKConfig.{name} must be a power of two, got {v}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"TopKConfig.strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if not 2 <= self.block <= 65536:
            raise ValueError(f"TopKConfig.block must be in [2, 65536], got {self.block}")
        return self


# At most this share of rows may need stage 2's refill (a second read of a tile that holds more of the
# top k than it emitted): a configuration above it is refused by the tuner and adjusted at lookup.
MAX_REFILL_RISK = 1e-3


def refill_risk(vocab: int, block: int, emit: int, k: int = 128) -> float:
    """Expected share of rows whose stage 2 re-reads a tile, with the top k spread over the row at
    random: tiles x P(a tile holds more than `emit` of them), a Poisson tail of mean k * block / V.
    Run 18 showed why it matters: a configuration tuned on one input (block 4096, emit 8 at
    V = 151936: 0.37 refilled rows per row) took 18.9 us on fresh inputs instead of 10.7."""
    lam = k * min(block, vocab) / vocab
    term = math.exp(-lam)
    for i in range(1, emit + 1):
        term *= lam / i
    tail = 0.0
    for i in range(emit + 1, emit + 200):
        term *= lam / i
        tail += term
        if term < 1e-18:
            break
    return -(-vocab // block) * tail


def fit_entry(vocab: int, block: int, emit: int, max_risk: float = MAX_REFILL_RISK) -> tuple[int, int]:
    """A table entry's (block, emit) fitted to a vocabulary it may not have been measured at: the tile
    shrinks while the vocabulary would have fewer than 8 tiles, and emit doubles while stage 2's refill
    would be likely at k = 128 (refill_risk above max_risk). The top-k's and the sampler's lookups share
    it; a sampler entry timed with its refills on fresh inputs may allow more risk (sample_config)."""
    while block > 1024 and -(-vocab // block) < 8:
        block //= 2
    while emit < 128 and refill_risk(vocab, block, emit) > max_risk:
        emit *= 2
    return block, emit


def _heuristic(vocab: int, rows: int) -> TopKConfig:
    # About 32 tiles: enough programs for one row, a small merge in stage 2, and (at k = 128, emit = 32)
    # about 4 of the top k per tile, far from saturating a tile's 32 emitted keys.
    block = 1024
    while block < 16384 and -(-vocab // block) > 48:
        block *= 2
    while block > 256 and block >= 2 * vocab:
        block //= 2
    return TopKConfig(block=block, warps1=8, warps2=8)


def topk_config(device: torch.device, vocab: int, rows: int) -> TopKConfig:
    """The measured entry of the nearest vocabulary (in log scale) and the smallest row bound >= rows;
    its tile shrinks if the vocabulary would otherwise have fewer than 8 tiles, and its emitted count
    grows if stage 2's refill path would otherwise be likely at k = 128 (refill_risk). No table: the
    heuristic."""
    e = nearest_entry("topk", device, vocab, rows)
    if e is None:
        return _heuristic(vocab, rows)
    block, emit = fit_entry(vocab, e["block"], e.get("emit", 32))
    return TopKConfig(block, e.get("m", 0), e.get("warps1", 4), e.get("warps2", 4), emit, e.get("strategy", "bitonic"))
