"""Copy the tree's src into a diagnostic snapshot whose stage 2 stamps %globaltimer at the points that
benchmarks/trace_long_passes.py reads (its docstring lists them). The stamps go to hist + 2**23 + pid *
128 (int64), so the snapshot's sampler allocates "hist" that large. Not for the tree: the stamps cost
registers and stores. Fails loudly where an anchor it edits at has changed.

    python benchmarks/make_trace_snapshot.py .ab/trace [.ab/variant/src]   # then carry .ab/trace on the device call
"""
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HELPERS = '''

# TRACE (diagnostic snapshot only, benchmarks/make_trace_snapshot.py): per program 128 int64 words at
# hist_ptr + TRACE_OFF + pid * 128.
TRACE_OFF = tl.constexpr(2 ** 23)


@triton.jit
def now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def mark(hist_ptr, slot):
    tl.store(hist_ptr + TRACE_OFF + tl.program_id(0).to(tl.int64) * 128 + slot, now())


@triton.jit
def mark_first(hist_ptr, slot):
    tl.atomic_cas(hist_ptr + TRACE_OFF + tl.program_id(0).to(tl.int64) * 128 + slot, tl.zeros((), tl.int64), now(),
                  sem="relaxed")


@triton.jit
def count(hist_ptr, slot, n):
    tl.atomic_add(hist_ptr + TRACE_OFF + tl.program_id(0).to(tl.int64) * 128 + slot, n.to(tl.int64))
'''

EDITS = {
    "kernels/shared_sets.py": [
        ("HELPER_LOOKS = tl.constexpr(8)\n", "HELPER_LOOKS = tl.constexpr(8)\n" + HELPERS),
        ("    c = wc\n    while c < wc + wn:\n",
         "    mark_first(hist_ptr, 50 + wi)\n    count(hist_ptr, 90 + wi, wn)\n    c = wc\n    while c < wc + wn:\n"),
        ('    tl.atomic_add(board_ptr + wr * BOARD_W + DONE_AT + wi, wn, sem="release")\n',
         '    tl.atomic_add(board_ptr + wr * BOARD_W + DONE_AT + wi, wn, sem="release")\n    mark(hist_ptr, 70 + wi)\n'),
        ("              thr, m, f_hi_k, target_k, f_hi, target, drew, wide, w_lo, w_t)\n    elif (phase == 3) & (row < n_share):",
         "              thr, m, f_hi_k, target_k, f_hi, target, drew, wide, w_lo, w_t)\n        mark(hist_ptr, 10 + i)\n"
         "    elif (phase == 3) & (row < n_share):"),
        ("                              clamped, who, thr, m, f_hi_k, target_k, f_hi, target, phase < 0, wide, w_lo, w_t)\n",
         "                              clamped, who, thr, m, f_hi_k, target_k, f_hi, target, phase < 0, wide, w_lo, w_t)\n"
         "                        mark(hist_ptr, 10 + i)\n"),
        ("                acted = phase < 3\n", "                mark(hist_ptr, 30 + i)\n                acted = phase < 3\n"),
        ("                if w >= POSTED:\n",
         "                if w >= POSTED:\n                    mark_first(hist_ptr, 100 + _pass_of(w))\n"),
        ("    wide, w_lo, w_t = _param(ip, 12) != 0, _param(ip, 13), _param(ip, 14)\n",
         "    wide, w_lo, w_t = _param(ip, 12) != 0, _param(ip, 13), _param(ip, 14)\n"
         "    mark_first(hist_ptr, 110 + wi + ((w_lo + w_t) == -123456789).to(tl.int32))\n"),
        # Inside a program's first chunk: 7 after chunk_pass (its loads, zeroing and atomics issued), 8 after
        # chunk_sums (the read-back), 9 after the fold's atomics are issued (before the release).
        ("                         w_lo=w_lo, w_t=w_t, WIDE_W=WW)\n",
         "                         w_lo=w_lo, w_t=w_t, WIDE_W=WW)\n        mark_first(hist_ptr, 7)\n"),
        ("            h = chunk_sums(adds_c, HC, WW, wide)\n",
         "            h = chunk_sums(adds_c, HC, WW, wide)\n            mark_first(hist_ptr, 8)\n"),
        ("        c += 1\n    tl.debug_barrier()\n",
         "        c += 1\n    mark_first(hist_ptr, 9)\n    tl.debug_barrier()\n"),
        # The owner after a search pass: 26 after a wide step, 28 after a narrow one, 27 once the early draw holds.
        ("            s_lo, shift, s_target, s_f_hi, jj, done = wide_step(total_w, w_lo, w_t, top_p, KEY_BITS)\n",
         "            s_lo, shift, s_target, s_f_hi, jj, done = wide_step(total_w, w_lo, w_t, top_p, KEY_BITS)\n"
         "                            mark(hist_ptr, 26)\n"),
        ("                                total, s_lo, shift, s_target, s_f_hi, p == 0, by_count, k, top_p, clamped, KEY_BITS)\n",
         "                                total, s_lo, shift, s_target, s_f_hi, p == 0, by_count, k, top_p, clamped, KEY_BITS)\n"
         "                            mark(hist_ptr, 28)\n"),
        ('                            tl.atomic_xchg(own, DONE, sem="relaxed")\n                        else:\n',
         '                            tl.atomic_xchg(own, DONE, sem="relaxed")\n                            mark(hist_ptr, 27)\n'
         '                        else:\n'),
        ("    progs = n_share + n_help\n", "    progs = n_share + n_help\n    mark(hist_ptr, 3)\n"),
        # A row's program that has no long set: 44 after its DONE exchange, 45 at its loop's first round, 46 before
        # its first look for other rows' chunks.
        ('        tl.atomic_xchg(own, DONE, sem="relaxed")   # publishes no data: no fence\n',
         '        tl.atomic_xchg(own, DONE, sem="relaxed")   # publishes no data: no fence\n        mark(hist_ptr, 44)\n'),
        ("    while go:\n", "    while go:\n        mark_first(hist_ptr, 45)\n"),
        ("        if (wr < 0) & ~acted & ~((phase < 3) & (all_taken | peeked)):\n",
         "        mark_first(hist_ptr, 46)\n        if (wr < 0) & ~acted & ~((phase < 3) & (all_taken | peeked)):\n"),
        # The owner after its last search step: 47 before the pass index's increment, 48 once its early draw is
        # known to hold (before the DONE exchange; 27 after it).
        ("                    i += 1\n", "                    mark(hist_ptr, 47)\n                    i += 1\n"),
        ("                            drawn = e_tok\n", "                            mark(hist_ptr, 48)\n                            drawn = e_tok\n"),
        # A program's first board scan (40 before, 41 after) and its first scan that finds a posted pass (43).
        ("            first, pending, free_all = _scan_board(",
         "            mark_first(hist_ptr, 40)\n            first, pending, free_all = _scan_board("),
        ("            if first < n_share:\n                r1 = (first + home) % n_share\n",
         "            mark_first(hist_ptr, 41)\n            if first < n_share:\n                mark_first(hist_ptr, 43)\n"
         "                r1 = (first + home) % n_share\n"),
        # 29: the owner's early draw's key computed (after its wide step, 26).
        ("                                                   KEY64, IS_BF16, HAS_MASK, MAX_BIAS)\n"
         "                                e_have = drew\n",
         "                                                   KEY64, IS_BF16, HAS_MASK, MAX_BIAS)\n"
         "                                mark(hist_ptr, 29)\n                                e_have = drew\n"),
        # A pass posted before the candidates (post_first_pass, which has no hist pointer): its time in the
        # row's last total word, which nothing else uses.
        ("          who, tl.full((), float(\"-inf\"), tl.float32), m, zero, inf, zero, inf, early, wide, w_lo, w_t)\n",
         "          who, tl.full((), float(\"-inf\"), tl.float32), m, zero, inf, zero, inf, early, wide, w_lo, w_t)\n"
         "    tl.store(total_ptr + row * TOTAL_W + TOTAL_W - 1, now())\n"),
        ("    return drawn, log_final, target", "    mark(hist_ptr, 4)\n    return drawn, log_final, target"),
    ],
    "kernels/sample.py": [
        ("from .shared_sets import announce, batch_may_exceed, post_first_pass, shared_long_set, wide_words",
         "from .shared_sets import announce, batch_may_exceed, post_first_pass, shared_long_set, wide_words, mark"),
        ("    row = tl.program_id(0).to(tl.int64)\n    helper = False\n",
         "    row = tl.program_id(0).to(tl.int64)\n    mark(hist_ptr, 0)\n"
         "    tl.store(hist_ptr + 2 ** 23 + row * 128 + 6, tl.inline_asm_elementwise(\"mov.u32 $0, %smid;\", \"=r\", [],"
         " dtype=tl.int32, is_pure=True, pack=1).to(tl.int64))\n    helper = False\n"),
        ("    wait_for_previous(PDL)\n    no = row < 0\n", "    wait_for_previous(PDL)\n    mark(hist_ptr, 1)\n    no = row < 0\n"),
        ("    wait_for_previous(PDL)   # everything below reads stage 1's output or writes the counts it reads\n",
         "    wait_for_previous(PDL)   # everything below reads stage 1's output or writes the counts it reads\n"
         "    mark(hist_ptr, 1)\n"),
        ("    # Rows whose set exceeds the bound and that exact passes over the whole row can settle",
         "    mark(hist_ptr, 2)\n    # Rows whose set exceeds the bound and that exact passes over the whole row can settle"),
        ("    tl.store(logprob_ptr + row, lp_out)\n", "    tl.store(logprob_ptr + row, lp_out)\n    mark(hist_ptr, 5)\n"),
    ],
    "sampler.py": [
        # (2**23 words: above the hist of 128 rows, shared_sets.hist_words)
        ('"hist": sc.get("hist", shared_sets.hist_words(n, n + helpers, chunks), torch.int64, dev)}',
         '"hist": sc.get("hist", 2 ** 23 + 512 * 128, torch.int64, dev)}'),
    ],
}


def main(dest, src=ROOT / "src"):
    dest = Path(dest) / "src"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name, edits in EDITS.items():
        p = dest / "sonicsampler" / name
        s = p.read_text()
        for old, new in edits:
            if s.count(old) != 1:
                sys.exit(f"{name}: anchor found {s.count(old)} times: {old[:70]!r}")
            s = s.replace(old, new)
        p.write_text(s)
    print(f"trace snapshot in {dest}")


if __name__ == "__main__":
    main(*sys.argv[1:3])   # [src]: another tree's src (an A/B variant's) instead of this one's
