"""Compile, for sm_90 and without a GPU, the exact launches a Python call makes, and report registers,
spills, shared memory and SASS counts (benchmarks/compile_report.report). The call runs on CPU tensors
with every kernel launch intercepted (recorded, not run) and its arguments turned into a signature.

    python -m benchmarks.compile_launches sampler      # from the repository root
    python -m benchmarks.compile_launches verify       # Sampler.verify: its stage 1 and the three draft kinds
    python -m benchmarks.compile_launches verify_plain # Sampler.verify as the benchmarks call it
    python -m benchmarks.compile_launches shared       # a batch that may hold long rows: stage 2's SHARED
                                                       # variant, with helper programs
    python -m benchmarks.compile_launches shared16     # the same cut into 16 chunks a pass (more than 16 rows)
    python -m benchmarks.compile_launches shared1      # a 1-row batch
    python -m benchmarks.compile_launches shared64_fill   # 64 rows, long_fill on an H100: 64 chunks, 68 helpers
    python -m benchmarks.compile_launches shared64     # 64 rows, 64 chunks, no helpers
    python -m benchmarks.compile_launches heavy        # penalties, bias and a grammar mask on every row
    python -m benchmarks.compile_launches standard     # the standard mix at the 32-row configuration
    python -m benchmarks.compile_launches standard1 4096 8,8   # ... at the 1-row configuration
    python -m benchmarks.compile_launches standard1_graph 4096 8,8   # ... as the CUDA-graph path launches it
    python -m benchmarks.compile_launches logprobs1_graph 4096 8,8   # ... with top-20 raw log-probabilities
    python -m benchmarks.compile_launches draft1_graph 4096 8,8      # ... returning draft distributions
    python -m benchmarks.compile_launches topk 1024 1,8   # the top-k (k = 128) at the 32-row configuration
SASS_DIR=<folder> also writes each launch's disassembly and cubin there (benchmarks/sass_loops.py reads the
latter); VOCAB=<n> compiles for another vocabulary (default 151936).
"""
import os
import sys

import torch

from benchmarks.compile_report import compile_kernel, report

_TYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.float64: "fp64", torch.int32: "i32",
          torch.int64: "i64", torch.int8: "i8", torch.uint32: "u32", torch.uint64: "u64", torch.bool: "i1"}


def _arg_type(a):
    if torch.is_tensor(a):
        return "*" + _TYPES[a.dtype]
    if isinstance(a, bool):
        return "i1"
    if isinstance(a, int):
        return "i64" if abs(a) >= 2**31 else "i32"
    if isinstance(a, float):
        return "fp32"
    return None


def signature_of(fn, args, kwargs):
    names = fn.arg_names
    sig, consts = {}, {}
    constexprs = {p.name for p in fn.params if p.is_constexpr}
    for name, a in zip(names, args):
        if name in constexprs:      # a constexpr passed positionally (verification's stage 1)
            consts[name] = a
        elif _arg_type(a):
            sig[name] = _arg_type(a)
    for name, a in kwargs.items():
        if name in constexprs:
            consts[name] = a
        elif name in names and _arg_type(a):      # a runtime argument passed by name
            sig[name] = _arg_type(a)
    # Arguments left to their defaults: a None pointer is a constexpr None, other defaults as given.
    for p in fn.params:
        if p.name not in sig and p.name not in consts and p.has_default:
            if p.is_constexpr or p.default is None:
                consts[p.name] = p.default
            else:
                sig[p.name] = _arg_type(p.default)
    return sig, consts


def capture(kernels, call):
    seen = []

    class Launch:
        def __init__(self, fn, grid):
            self.fn, self.grid = fn, grid

        def __call__(self, *args, **kwargs):
            seen.append((self.fn, args, dict(kwargs)))

    for k in kernels:
        k.__class__ = type("Spy", (k.__class__,), {"__getitem__": lambda self, grid: Launch(self, grid)})
    try:
        call()
    finally:
        for k in kernels:
            k.__class__ = k.__class__.__mro__[1]
    return seen


# LONG: the sub-tile of the exact passes (None: the Sampler's); REGS: (stage 1, stage 2) register caps (verify_plain)
BLOCK, WARPS, LONG, REGS = 8192, (4, 8), None, None


def main(what):
    import sonicsampler.sampler as sampler_mod
    from sonicsampler import SamplingParams
    from sonicsampler.kernels.sample import sample_stage1, sample_stage2
    from sonicsampler.sampler import Sampler

    import importlib
    sampler_mod.INTERPRETED = True     # let the launchers accept CPU tensors: nothing is launched
    importlib.import_module("sonicsampler.topk").INTERPRETED = True
    importlib.import_module("sonicsampler.verification").INTERPRETED = True
    importlib.import_module("sonicsampler.launch").INTERPRETED = True   # every launch through the spy

    v = int(os.environ.get("VOCAB", 151936))   # VOCAB=<n>: another vocabulary (its tiles, its tables)

    def call():
        s = Sampler(v, 2, "cpu", block=BLOCK, warps=WARPS, long_block=LONG)
        s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=1))
        s.add_request(1, SamplingParams(temperature=0.0, logprobs=5, repetition_penalty=1.1, logit_bias={3: 1.0}))
        s.sample(torch.randn(2, v).to(torch.bfloat16), [0, 1], [0, 0])

    def call_verify():
        from sonicsampler.outputs import SparseDraftProbs
        b, gamma = 2, 3
        s = Sampler(v, b, "cpu", block=BLOCK, warps=WARPS, long_block=LONG)
        s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=1, frequency_penalty=0.5))
        s.add_request(1, SamplingParams(temperature=0.0, logprobs=5, repetition_penalty=1.1, logit_bias={3: 1.0}))
        x = torch.randn(b * (gamma + 1), v).to(torch.bfloat16)
        d = torch.zeros(b, gamma, dtype=torch.int64)
        s.verify(x, d, [0, 1], [0, 0])
        s.verify(x, d, [0, 1], [0, 0], draft_probs=torch.zeros(b, gamma, v))
        s.verify(x, d, [0, 1], [0, 0], draft_probs=SparseDraftProbs(torch.zeros(b, gamma, 8, dtype=torch.int32),
                                                                     torch.zeros(b, gamma, 8)))

    def call_verify_plain():      # the benchmarks' verification: no log-probabilities, dense drafts
        b, gamma = 2, 3
        s = Sampler(v, b, "cpu", block=BLOCK, warps=WARPS, long_block=LONG, regs=REGS)
        for i in range(b):
            s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
        s.verify(torch.randn(b * (gamma + 1), v).to(torch.bfloat16), torch.zeros(b, gamma, dtype=torch.int64),
                 [0, 1], [0, 0], draft_probs=torch.zeros(b, gamma, v))

    def call_shared(rows=2, **opts):   # top-p without top-k (its set may exceed the bound) beside the standard mix
        s = Sampler(v, rows, "cpu", block=BLOCK, warps=WARPS, long_block=LONG, **opts)
        for i in range(rows):
            s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=1) if i % 2 == 0
                          else SamplingParams(temperature=0.5, top_p=0.9, seed=2))
        s.sample(torch.randn(rows, v).to(torch.bfloat16), list(range(rows)), [0] * rows)

    def call_shared64_fill():     # 64 rows with long_fill on an H100 (132 SMs): 64 chunks, 68 helpers
        orig = sampler_mod._sm_count_or_none, sampler_mod._sm_count
        sampler_mod._sm_count_or_none = sampler_mod._sm_count = lambda dev: 132
        try:
            call_shared(64, long_fill=True)
        finally:
            sampler_mod._sm_count_or_none, sampler_mod._sm_count = orig

    def call_shared1():           # a 1-row batch of the same
        s = Sampler(v, 1, "cpu", block=BLOCK, warps=WARPS, long_block=LONG)
        s.add_request(0, SamplingParams(temperature=0.5, top_p=0.9, seed=2))
        s.sample(torch.randn(1, v).to(torch.bfloat16), [0], [0])

    def call_heavy():             # penalties, bias and a grammar mask on every row (issue 4's heavy mix), with
        # stage 1 as the table runs it at 32 rows (extract, emit 8, penalised batches capped at 160 registers)
        s = Sampler(v, 2, "cpu", block=BLOCK, warps=WARPS, long_block=LONG, strategy="extract", emit=8,
                    regs=(160, 0))
        pen = dict(repetition_penalty=1.1, frequency_penalty=0.3, presence_penalty=0.2, logit_bias={7: 2.0})
        s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, min_p=0.02, seed=1, **pen))
        s.add_request(1, SamplingParams(temperature=0.0, **pen))
        mask = torch.full((2, -(-v // 32)), -1, dtype=torch.int32)
        s.sample(torch.randn(2, v).to(torch.bfloat16), [0, 1], [0, 0], mask)

    def call_standard():          # the standard mix as the table runs it at 32 rows (extract, emit 8, 128 registers)
        s = Sampler(v, 2, "cpu", block=BLOCK, warps=WARPS, long_block=LONG, strategy="extract", emit=8,
                    regs=(128, 255))
        for i in range(2):
            s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
        s.sample(torch.randn(2, v).to(torch.bfloat16), [0, 1], [0, 0])

    def call_standard1(slots=(0,), positions=(0,), draft=False, **extra):   # the standard mix as the table runs
        # it at 1 row (rank, emit 16; `standard1 4096 8,8`); extra: more SamplingParams; draft: return_draft_probs
        s = Sampler(v, 1, "cpu", block=BLOCK, warps=WARPS, long_block=LONG, strategy="rank", emit=16)
        s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=0, **extra))
        s.sample(torch.randn(1, v).to(torch.bfloat16), slots, positions, return_draft_probs=draft)

    def call_standard1_graph(draft=False, **extra):   # standard1 as the CUDA-graph path launches it (device
        # slots: stage 2's SHARED variant with helpers); CPU slot tensors are taken as device ones, as a GPU's would be
        orig = Sampler.on_host
        Sampler.on_host = staticmethod(lambda values: not torch.is_tensor(values))
        try:
            call_standard1(torch.tensor([0]), torch.tensor([0]), draft, **extra)
        finally:
            Sampler.on_host = orig

    def call_logprobs1_graph():   # ... with top-20 raw log-probabilities (sampler_mix's standard_logprobs)
        call_standard1_graph(logprobs=20)

    def call_draft1_graph():      # ... returning the draft distributions (return_draft_probs=True)
        call_standard1_graph(draft=True)

    def call_topk():              # the top-k, k = 128, extract with 8 emitted per tile (the table's from 4 rows up)
        from sonicsampler.topk import topk
        from sonicsampler.tuning.topk_config import TopKConfig
        topk(torch.randn(2, v).to(torch.bfloat16), 128,
             config=TopKConfig(block=BLOCK, emit=8, warps1=WARPS[0], warps2=WARPS[1], strategy="extract"))

    from sonicsampler.kernels.raw_top import raw_top_fill
    from sonicsampler.kernels.topk import topk_stage1, topk_stage2
    from sonicsampler.kernels.verify import verify_stage2
    calls = {"sampler": call, "verify": call_verify, "verify_plain": call_verify_plain, "shared": call_shared,
             # the passes cut into 16 chunks, as batches of more than 16 rows launch them (the search's words in
             # a copy per warp: shared_sets.hist_words)
             "shared16": lambda: call_shared(long_chunks_small=16), "shared1": call_shared1,
             # 64 rows: 64 chunks with long_fill's 68 helpers, and without helpers (long_chunks=64)
             "shared64_fill": call_shared64_fill, "shared64": lambda: call_shared(64, long_chunks=64, long_chunks_small=64),
             "shared64_16": lambda: call_shared(64),   # 64 rows as the CPU plans them: 16 chunks, no helpers
             "heavy": call_heavy, "standard": call_standard, "standard1": call_standard1,
             "standard1_graph": call_standard1_graph, "logprobs1_graph": call_logprobs1_graph,
             "draft1_graph": call_draft1_graph, "topk": call_topk}
    for fn, args, kwargs in capture([sample_stage1, sample_stage2, topk_stage1, topk_stage2, verify_stage2,
                                     raw_top_fill], calls[what]):
        warps = kwargs.pop("num_warps", 4)
        maxnreg = kwargs.pop("maxnreg", None)      # a stage's register cap (Sampler(regs=), the table's)
        sig, consts = signature_of(fn, args, kwargs)
        dump = os.environ.get("SASS_DIR")     # also write each launch's disassembly there
        report(f"{fn.__name__} {consts}", compile_kernel(fn, sig, consts, warps, maxnreg),
               dump=dump and os.path.join(dump, f"{what}_{fn.__name__}.sass"))


if __name__ == "__main__":
    if len(sys.argv) > 2:     # e.g. `sampler 4096 8,8 4096`: tile size, (stage-1, stage-2) warps, long sub-tile;
        # `verify_plain 1024 1,8 1024 128,128`: and (stage-1, stage-2) register caps
        BLOCK = int(sys.argv[2])
        WARPS = tuple(int(w) for w in sys.argv[3].split(",")) if len(sys.argv) > 3 else WARPS
        LONG = int(sys.argv[4]) if len(sys.argv) > 4 else None
        REGS = tuple(int(r) for r in sys.argv[5].split(",")) if len(sys.argv) > 5 else None
    main(sys.argv[1] if len(sys.argv) > 1 else "sampler")
