"""Can a search pass's per-token sums go to shared memory instead of the L2? (a diagnostic, not a test)

Run 237 (benchmarks/atomics_probe.py, graph-timed) put the shared passes' per-token 64-bit atomics at the
L2's total rate: 256 programs x 2 sub-tiles of 1024 tokens (four long rows' first passes at 64 rows with
long_fill) took 7.9 µs against 2.2 for the loads alone, ~85 atomics per ns over the whole GPU, and 16
programs reached only ~1.1 per ns per SM. Triton has no shared-memory atomics, but inline PTX can
declare a static `.shared` array in a block (ptxas accepts it in a kernel and in a noinline function;
Triton's dynamic shared memory is separate) and add into it. Each program here builds its table of
TABLE words in shared memory and stores it once, against per-token global atomics (`global`: long_rows.red_add, the passes' own):
- `smem64`: red.shared.add.u64 (sm_90 has no native 64-bit shared add: ptxas emits a CAS loop);
- `smem32x3`: the 64-bit weight (< 2**42) as three 14-bit limbs, each added by a native 32-bit
  red.shared into its own table (exact while a table's word gets fewer than 2**18 tokens), recombined;
- `smem32`: one 32-bit add per token (counts alone: the floor of the shared form).
`load` is the loads and one store. Every form's table is checked against `global`'s (counts against
a histogram) before timing. Digit patterns as atomics_probe's.

    python3 benchmarks/smem_hist_probe.py [--out FILE]      (on the GPU machine)
"""
import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.atomics_probe import SUB, V, _time, digit_patterns, write_jsonl  # noqa: E402
from sonicsampler.kernels.long_rows import red_add  # noqa: E402


@triton.jit
def _smem_base(x):
    """The 32-bit shared address of one static array of 3 x 2048 64-bit words (48 KiB, the most a
    static declaration may hold)."""
    return tl.inline_asm_elementwise("{ .shared .align 8 .b64 probe_hist[6144]; mov.u32 $0, probe_hist; }",
                                     "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _st(addr, v, W64: tl.constexpr):
    if W64:
        tl.inline_asm_elementwise("{ st.shared.u64 [$1], $2; mov.u32 $0, 0; }", "=r,r,l", [addr, v.to(tl.int64)],
                                  dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.inline_asm_elementwise("{ st.shared.u32 [$1], $2; mov.u32 $0, 0; }", "=r,r,r", [addr, v.to(tl.int32)],
                                  dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _red(addr, v, m, W64: tl.constexpr):
    if W64:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.s32 p, $3, 0; @p red.shared.add.u64 [$1], $2; mov.u32 $0, 0; }",
            "=r,r,l,r", [addr, v.to(tl.int64), m.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.s32 p, $3, 0; @p red.shared.add.u32 [$1], $2; mov.u32 $0, 0; }",
            "=r,r,r,r", [addr, v.to(tl.int32), m.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _ld(addr, W64: tl.constexpr):
    if W64:
        return tl.inline_asm_elementwise("ld.shared.u64 $0, [$1];", "=l,r", [addr], dtype=tl.int64,
                                         is_pure=False, pack=1)
    else:
        return tl.inline_asm_elementwise("ld.shared.u32 $0, [$1];", "=r,r", [addr], dtype=tl.int32,
                                         is_pure=False, pack=1).to(tl.int64) & 0xFFFFFFFF


@triton.jit
def _probe(dig_ptr, out_ptr, n_sub, TABLE: tl.constexpr, MODE: tl.constexpr, SUB: tl.constexpr):
    """MODE 0: loads and one store; 1: global atomics; 2: smem64; 3: smem32x3; 4: smem32 (counts)."""
    pid = tl.program_id(0)
    out = out_ptr + pid * TABLE
    i = tl.arange(0, SUB)
    j = tl.arange(0, TABLE)
    LIMBS: tl.constexpr = 3 if MODE == 3 else 1
    W64: tl.constexpr = MODE == 2
    STEP: tl.constexpr = 8 if MODE == 2 else 4
    if MODE >= 2:
        base = _smem_base(pid)
        for l in tl.static_range(LIMBS):
            _st(base + (l * TABLE + j) * STEP, tl.zeros((TABLE,), tl.int64), W64)
        tl.debug_barrier()
    acc = tl.zeros((SUB,), tl.int64)
    t = tl.zeros((), tl.int32)
    while t < n_sub:
        d = tl.load(dig_ptr + (pid * n_sub + t) * SUB + i)
        # a weight as the passes' (round(w * 2**39), w < 2): up to 40 bits, varying by token
        w = (d.to(tl.int64) * 2654435761 + i) & 0xFFFFFFFFFF
        if MODE == 0:
            acc += w
        elif MODE == 1:
            red_add(out + d, w, d >= 0)
        elif MODE == 2:
            _red(base + d * 8, w, d >= 0, True)
        elif MODE == 3:
            for l in tl.static_range(3):
                _red(base + (l * TABLE + d) * 4, (w >> (14 * l)) & 0x3FFF, d >= 0, False)
        else:
            _red(base + d * 4, tl.full((SUB,), 1, tl.int32), d >= 0, False)
        t += 1
    if MODE == 0:
        tl.store(out + i, acc)
    elif MODE >= 2:
        tl.debug_barrier()
        if MODE == 3:
            s = _ld(base + j * 4, False) + (_ld(base + (TABLE + j) * 4, False) << 14) \
                + (_ld(base + (2 * TABLE + j) * 4, False) << 28)
        else:
            s = _ld(base + j * STEP, W64)
        tl.store(out + j, s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="out/smem_hist_probe.jsonl")
    args = ap.parse_args()
    pats = digit_patterns()
    rows = []
    names = {0: "load", 1: "global", 2: "smem64", 3: "smem32x3", 4: "smem32"}
    for progs, n_sub in ((256, 2), (128, 9), (16, 9), (128, 1)):
        n = progs * n_sub * SUB
        for pat in ("top", "low", "same", "wide"):
            table = 2048 if pat == "wide" else 256
            dig = pats[pat].repeat((n + V - 1) // V)[:n].to(torch.int32).contiguous()
            want = None
            for mode, kname in names.items():
                out = torch.zeros(table * progs, device="cuda", dtype=torch.int64)
                launch = lambda: _probe[(progs,)](dig, out, n_sub, table, mode, SUB, num_warps=8)
                launch()
                torch.cuda.synchronize()
                ok = None
                if mode == 1:
                    want = out.clone()
                elif mode in (2, 3):
                    ok = bool(torch.equal(out, want))
                elif mode == 4:
                    counts = torch.stack([torch.bincount(dig.view(progs, -1)[p].long(), minlength=table)
                                          for p in range(progs)]).view(-1)
                    ok = bool(torch.equal(out, counts))
                us = _time(launch)
                rows.append({"what": "smem_hist", "pattern": pat, "kernel": kname, "programs": progs,
                             "sub_tiles": n_sub, "table": table, "equal": ok, "us": round(us, 2)})
                print(rows[-1], flush=True)
    write_jsonl(args.out, rows)


if __name__ == "__main__":
    main()
