"""Launch configuration of the fused sampler's two launches: from a measured table, or explicit.

`tuning/tables/sample_<arch>.json` is written by `benchmarks/tune_sampler.py` on a GPU of that
architecture (temperature 0.7, top-k 128, top-p 0.9, bf16). Without a table the top-k's configuration
(its tile) and 8 warps per stage apply. An entry's `regs1_penalised` (stage 1's register cap for
batches with penalties, bias or a grammar mask) comes from `benchmarks/sampler_mix.py --mix heavy
--regs1 ...` and is added by hand: the tuning script times the standard mix only.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .table import nearest_entry
from .topk_config import MAX_REFILL_RISK, fit_entry, topk_config


@dataclass(frozen=True)
class SampleConfig:
    block: int        # stage-1 tile (power of two)
    emit: int = 32    # candidates each tile hands to stage 2 (power of two; the rest is refilled on demand)
    warps1: int = 8
    warps2: int = 8
    strategy: str = "bitonic"   # stage 1's selection of a tile's E best keys: one of topk_config.STRATEGIES
    # Register caps per thread (ptxas .maxnreg; 0: none) of each stage. Uncapped, ptxas gives stage 1 all
    # 255 registers at one warp: the rare branches (penalties, bias, untruncated noise) count as much as
    # the plain path, and 255 registers leave 8 one-warp programs per SM, too few to hide the loads.
    regs1: int = 0
    regs2: int = 0
    # Stage 1's cap for batches with penalties, logit bias or a grammar mask (None: regs1). Their
    # prologue reads counts, masks and bias and holds more live values: run 78 timed the heavy mix at
    # 32 rows 52.6 / 52.9 us under 128 registers against 47.9 under 160 (48.3 uncapped), where the
    # standard mix prefers 128 (run 70: 27.6 against 28.5 us).
    regs1_penalised: int | None = None
    # Stage 1's cap in verification's launches (None: as the sampler's). Its compile (PENDING) also counts
    # each row's earlier draft tokens for the penalties and holds more live values: runs 150-151 capped the
    # sampler's stage 1 at 96 from 33 rows up (the standard case 54.0 -> 52.7 us at 128 rows), where the
    # same cap took verification γ = 3 from 58.9 / 97.9 / 207.4 to 75.4 / 132.1 / 274.0 us at B = 32 / 64 /
    # 128.
    regs1_verify: int | None = None

    def stage1_regs(self, penalised: bool, verify: bool = False) -> int:
        """Stage 1's register cap for a batch with (penalised) or without penalties, bias or mask, in the
        sampler's launches or (verify) in verification's."""
        if penalised and self.regs1_penalised is not None:
            return self.regs1_penalised
        if verify and self.regs1_verify is not None:
            return self.regs1_verify
        return self.regs1


# Past its largest row bound the table's last entry still applies if that bound is a batch of at least
# this many rows (a throughput configuration); a table measured at small batches only is not stretched
# to large ones. Run 26: verification at B = 64 and 128 (256 and 512 target rows) fell past the table's
# 128 rows onto the fallback below and took 653 and 1273 us, against 124 at 128 rows.
EXTRAPOLATE_FROM_ROWS = 32


def sample_config(device: torch.device, vocab: int, rows: int) -> SampleConfig:
    e = nearest_entry("sample", device, vocab, rows)
    if e is None or (rows > e["max_rows"] and e["max_rows"] < EXTRAPOLATE_FROM_ROWS):
        return SampleConfig(topk_config(device, vocab, rows).block)
    # Fitted to the vocabulary as for top-k. Without the emit guard the V = 151936 entries (emit 8 at
    # block 1024) applied to V = 32768 refilled about half the rows, and verification there took
    # 46.6 us at B = 1, more than at V = 151936 (38.3; run 29).
    # An entry may allow a higher refill risk than the default 1e-3 (`max_refill_risk`) where it was timed
    # on fresh inputs with its refills counted: V = 32768's 512-token tiles emitting 8 re-read a tile in
    # ~1.5% of rows and still beat 1024 / 16 at every measured batch (run 249).
    block, emit = fit_entry(vocab, e["block"], e.get("emit", 32), e.get("max_refill_risk", MAX_REFILL_RISK))
    return SampleConfig(block, emit, e.get("warps1", 8), e.get("warps2", 8), e.get("strategy", "bitonic"),
                        e.get("regs1", 0), e.get("regs2", 0), e.get("regs1_penalised"), e.get("regs1_verify"))
