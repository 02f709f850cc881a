"""`sonicsampler.topk`: exact two-stage top-k over the last dimension."""
from __future__ import annotations

import torch

from .errors import SamplingInputError
from .kernels import INTERPRETED
from .kernels.topk import topk_stage1, topk_stage2
from .launch import Launcher, int_spec, tensor_spec
from .outputs import _check_fields
from .pdl import stage2_options
from .tuning import TopKConfig, topk_config

MAX_K = 128
# Key of -inf under the order-preserving encoding (kernels/keys.py): keys at or below it are never selected.
_NEG_INF_KEY = {torch.bfloat16: 0x007F, torch.float16: 0x03FF, torch.float32: 0x007FFFFF}
_INF_KEY = {torch.bfloat16: 0xFF80, torch.float16: 0xFC00, torch.float32: 0xFF800000}
_SUPPORTED = tuple(_NEG_INF_KEY)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class _Scratch:
    """Per-device scratch buffers, grown on demand and reused: their size depends on shapes only.

    A buffer that grows is replaced but kept alive: a CUDA graph captured earlier still points at
    it, and freeing it would hand its memory to other tensors under that graph's replays.
    """

    def __init__(self):
        self._bufs: dict[tuple, torch.Tensor] = {}
        self._retired: list[torch.Tensor] = []

    def get(self, name: str, numel: int, dtype: torch.dtype, device: torch.device, zeroed: bool = False) -> torch.Tensor:
        """zeroed: a new buffer starts at zero (counters that the kernels return to zero after use)."""
        key = (name, dtype, device)
        buf = self._bufs.get(key)
        if buf is None or buf.numel() < numel:
            if zeroed and device.type == "cuda" and torch.cuda.is_current_stream_capturing():
                # Its zero fill would be captured, so it would run only at that graph's replays, while
                # eager calls and other graphs use the buffer too (as garbage counters until then).
                raise RuntimeError(
                    f"sonicsampler: a CUDA graph capture needs scratch {name!r} for {numel} entries, which no "
                    f"earlier call made: run Sampler.warmup / warmup_verify for this batch size (or one eager "
                    f"call of the same shape) before capturing")
            if buf is not None:
                self._retired.append(buf)
            buf = (torch.zeros if zeroed else torch.empty)(max(numel, 1), dtype=dtype, device=device)
            self._bufs[key] = buf
        return buf[:numel]


_scratch = _Scratch()


def topk(logits: torch.Tensor, k: int, *, config: TopKConfig | None = None,
         out: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest entries of each row of `logits` (N, V), exactly as `reference.topk`.

    Returns (values, indices), each (N, k): values in the input dtype, indices int64, sorted descending,
    ties broken toward the lower index (-0.0 and +0.0 tie). bf16/fp16 rank on their 16-bit values, fp32
    on full fp32 values. -inf entries are never selected: a row with fewer than k other entries is
    padded with value -inf and index -1. A row containing NaN is reported with every index -1 and every
    value NaN. k is 1..128; V is any size up to 2**31; the row stride is free (the last dimension must be
    contiguous). No host synchronization, no data-dependent allocation: CUDA-graph capturable, and a new
    number of rows never recompiles.

    out: (values, indices) to write into instead of new tensors, exactly as they would be allocated:
    (N, k) of the logits' dtype and int64, on its device, contiguous, 16-byte aligned (checked).
    """
    if not torch.is_tensor(logits) or logits.dim() != 2:
        raise SamplingInputError("logits", f"must be a 2-D tensor (rows, vocab), got {getattr(logits, 'shape', type(logits))}")
    if logits.dtype not in _SUPPORTED:
        raise SamplingInputError("logits", f"dtype must be one of {_SUPPORTED}, got {logits.dtype}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SamplingInputError("k", f"must be an integer in 1..{MAX_K}, got {k!r}")
    n, v = logits.shape
    if v == 0:
        raise SamplingInputError("logits", "vocabulary dimension is empty")
    if logits.stride(1) != 1:
        raise SamplingInputError("logits", f"last dimension must be contiguous (stride 1), got stride {logits.stride(1)}")
    dev = logits.device
    if dev.type != "cuda" and not INTERPRETED:
        raise SamplingInputError("logits", f"is on {dev}: the kernels need a CUDA device, or TRITON_INTERPRET=1 "
                                 "set before sonicsampler is imported (Triton's CPU interpreter, for tests)")
    if out is None:
        values = torch.empty((n, k), dtype=logits.dtype, device=dev)
        indices = torch.empty((n, k), dtype=torch.int64, device=dev)
    else:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise SamplingInputError("out", f"must be a (values, indices) pair of tensors, got {type(out).__name__}")
        values, indices = out
        _check_fields([("values", values, logits.dtype, (n, k)), ("indices", indices, torch.int64, (n, k))], dev)
    if n == 0:
        return values, indices
    stage1, stage2 = _launches(logits, k, config or topk_config(dev, v, n), values, indices)
    stage1()
    stage2()
    return values, indices


def topk_warmup(vocab: int, max_rows: int, ks=(128,), dtype: torch.dtype = torch.bfloat16,
                device="cuda") -> int:
    """Compile, before serving, every launch variant that `topk` over 1..max_rows rows of `vocab`
    logits of `dtype` will use for each k in `ks`. The measured table picks a configuration per row
    bucket and Triton compiles each on its first launch, so without this a batch size of a bucket not
    seen yet compiles mid-serving (a few seconds). Returns the variant count."""
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    variants = {}
    for k in ks:
        for n in range(1, max_rows + 1):
            cfg = topk_config(dev, vocab, n)
            c = max(2, _pow2_at_least(k))
            # k is also a launch argument Triton specialises on (1, multiples of 16)
            variants.setdefault((cfg, c, min(c, max(2, cfg.emit)), stage2_options(dev, n, "topk")["PDL"], int_spec(k)),
                                (n, k))
    if not INTERPRETED:   # the interpreter compiles nothing
        for n, k in variants.values():
            topk(torch.zeros(n, vocab, dtype=dtype, device=dev), k)
        torch.cuda.synchronize(dev)
    return len(variants)


def _plan(logits, k, cfg: TopKConfig) -> dict:
    """What the two launches of a top-k over logits' shape take besides the per-call tensors: grids,
    scratch, constexprs and launch options."""
    n, v = logits.shape
    dev = logits.device
    cfg.check()
    c = max(2, _pow2_at_least(k))          # merged candidates per row
    e = min(c, max(2, cfg.emit))           # keys each tile emits
    m = cfg.m or 4 * e                     # stage 1's filter capacity
    if m < 2 * e:
        raise SamplingInputError("config", f"m={m} is smaller than twice the emitted count {e}")
    block = max(cfg.block, m)
    z = -(-v // block)
    # Enough tile lists that the merge holds at least C keys (missing tiles read as empty).
    z_log2 = max(_log2(_pow2_at_least(z)), _log2(c) - _log2(e))
    key64 = logits.dtype == torch.float32
    key_dtype = torch.uint64 if key64 else torch.uint32
    pdl = stage2_options(dev, n, "topk")   # small batches: stage 2 starts during stage 1's last wave (pdl.py)
    return {"z": z, "k": k,
            "cand": _scratch.get("cand", n * z * e, torch.uint64, dev),
            "compact": _scratch.get("compact", n * z * m, key_dtype, dev),
            "refill": _scratch.get("refill", n * 4 * c, key_dtype, dev),
            "nan": _scratch.get("nan", n * z, torch.int32, dev),
            "const1": dict(BLOCK_LOG2=_log2(block), E_LOG2=_log2(e), M_LOG2=_log2(m), KEY64=key64,
                           STRATEGY=cfg.strategy, NEG_INF_KEY=_NEG_INF_KEY[logits.dtype],
                           INF_KEY=_INF_KEY[logits.dtype], PDL=pdl["PDL"], num_warps=cfg.warps1),
            "const2": dict(Z_LOG2=z_log2, E_LOG2=_log2(e), C_LOG2=_log2(c), BLOCK_LOG2=_log2(block),
                           KEY64=key64, NEG_INF_KEY=_NEG_INF_KEY[logits.dtype], num_warps=cfg.warps2, **pdl)}


def _args(plan: dict, logits, values, indices) -> tuple[tuple, tuple]:
    """The two launches' leading arguments (every parameter before the constexprs)."""
    n, v = logits.shape
    stride, z = logits.stride(0), plan["z"]
    return ((logits, stride, v, plan["cand"], plan["compact"], plan["nan"], z),
            (plan["cand"], plan["nan"], z, logits, stride, v, plan["k"], values, indices, plan["refill"]))


def _launches(logits, k, cfg: TopKConfig, values, indices):
    """The two launches of one top-k call, as closures (benchmarks time them one by one)."""
    plan = _plan(logits, k, cfg)
    a1, a2 = _args(plan, logits, values, indices)
    n = logits.shape[0]

    def stage1():
        topk_stage1[(plan["z"] * n,)](*a1, **plan["const1"])

    def stage2():
        topk_stage2[(n,)](*a2, **plan["const2"])

    return stage1, stage2


_LAUNCH1, _LAUNCH2 = Launcher(topk_stage1), Launcher(topk_stage2)
_PLANS: dict = {}
_DYNAMIC1, _DYNAMIC2 = (0, 1), (3, 4, 7, 8)   # the per-call logits (and row stride), values, indices


def topk_launched(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`topk` for a caller on a hot path whose inputs are already checked (the Sampler's raw top-n):
    the plan is kept per shape and both launches go through launch.Launcher (a bare C launch once
    compiled), where Triton's binding of every argument cost tens of microseconds of host time each."""
    n, v = logits.shape
    dev = logits.device
    values = torch.empty((n, k), dtype=logits.dtype, device=dev)
    indices = torch.empty((n, k), dtype=torch.int64, device=dev)
    pkey = (n, v, k, logits.dtype, dev)
    plan = _PLANS.get(pkey)
    if plan is None:
        plan = _PLANS[pkey] = _plan(logits, k, topk_config(dev, v, n))
    a1, a2 = _args(plan, logits, values, indices)
    key = (pkey, tensor_spec(logits), int_spec(logits.stride(0)), tensor_spec(values), tensor_spec(indices))
    _LAUNCH1((plan["z"] * n,), key, a1, plan["const1"], _DYNAMIC1)
    _LAUNCH2((n,), key, a2, plan["const2"], _DYNAMIC2)
    return values, indices
