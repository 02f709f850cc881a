"""The hottest loops of one kernel in an Nsight Compute source-page CSV (`ncu -i REP --page source --csv
--print-source sass`, as ncu_source in gpu_sampler_session.sh writes them): per loop (a backward
branch's span) its static and executed warp instructions, executions of its first instruction (per
warp), instructions per execution, and the stall reasons of its samples.

    tar -xzf benchmarks/results/h100/run241_ncu_csv.tgz -C /tmp/run241
    python benchmarks/ncu_loops.py /tmp/run241/sample_long_nucleus_1_in_16_64.sass.csv sample_stage2 [TOP]

Session 41 (run 241): the long passes' sub-tile loop ran ~475 instructions a warp per sub-tile, and a
third to a half of its stall samples were instruction fetch (no_instruction).
"""
from __future__ import annotations

import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_hotspots import _num, blocks  # noqa: E402


def rows_of(path: str, kernel: str) -> list[dict]:
    """The source page's rows of one kernel, by column name (ncu_hotspots.blocks splits the tables)."""
    with open(path, errors="replace") as f:
        for title, header, rows in blocks(f.read().splitlines()):
            if kernel in title.split():
                return [dict(zip(header, r)) for r in rows]
    return []


def main(path: str, kernel: str, top: int = 8) -> None:
    rows = rows_of(path, kernel)
    addr = [int(r["Address"], 16) for r in rows]
    at = {a: i for i, a in enumerate(addr)}
    ex = [_num(r["Instructions Executed"]) for r in rows]
    total = sum(ex) or 1.0
    stalls = [c for c in (rows[0] if rows else {}) if c.startswith("stall_") and "Not Issued" not in c]
    spans = []
    for i, r in enumerate(rows):
        m = re.search(r"BRA\s+(0x[0-9a-f]+)", r["Source"])
        if m and int(m.group(1), 16) < addr[i] and int(m.group(1), 16) in at:
            spans.append((at[int(m.group(1), 16)], i))
    spans.sort(key=lambda se: -sum(ex[se[0]:se[1] + 1]))
    for s, e in spans[:top]:
        dyn = sum(ex[s:e + 1])
        why = collections.Counter()
        for j in range(s, e + 1):
            for c in stalls:
                why[c] += _num(rows[j][c])
        n = sum(why.values()) or 1.0
        print(f"loop {addr[s]:#x}..{addr[e]:#x}: {e - s + 1} static, {dyn:.0f} executed ({100 * dyn / total:.1f}%), "
              f"first instruction {ex[s]:.0f}x, {dyn / max(ex[s], 1):.0f} per execution; stalls "
              + ", ".join(f"{c[6:]} {100 * v / n:.0f}%" for c, v in why.most_common(5)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
