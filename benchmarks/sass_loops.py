"""The loops of a compiled kernel, from its SASS with line information, and which source files their
instructions come from (no GPU needed). A loop is the span from a backward branch's target to the
branch; spans holding more than a few instructions of the given source lines are listed.

    SASS_DIR=/tmp/sass python -m benchmarks.compile_launches shared64_fill
    python benchmarks/sass_loops.py /tmp/sass/shared64_fill_sample_stage2.cubin long_rows.py 180 340

Session 41 used it to size the long passes' sub-tile loop (1 217 static instructions in the tree) and
the variants that split it (benchmarks/variants/loopsplit.patch, loopplain.patch).
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_report import BIN  # noqa: E402  (Triton's CUDA tools)

NVDISASM = os.path.join(BIN, "nvdisasm")


def instructions(cubin: str) -> tuple[list, dict]:
    """[(address, (file, line) or None, text)] in address order, and {label: address}."""
    sass = subprocess.run([NVDISASM, "-g", "-c", cubin], capture_output=True, text=True, check=True).stdout
    seq, labels, pending, where = [], {}, [], None
    for line in sass.split("\n"):
        lab = re.match(r"^(\.L_x_\d+):", line.strip())
        if lab:
            pending.append(lab.group(1))
            continue
        src = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if src:
            where = (os.path.basename(src.group(1)), int(src.group(2)))
            continue
        ins = re.match(r"\s+/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if ins:
            addr = int(ins.group(1), 16)
            seq.append((addr, where, ins.group(2).strip()))
            for p in pending:
                labels[p] = addr
            pending = []
    return seq, labels


def loops(seq: list, labels: dict) -> list[tuple[int, int]]:
    """(first, last) indices of every span closed by a backward branch."""
    at = {a: i for i, (a, _, _) in enumerate(seq)}
    out = []
    for i, (addr, _, text) in enumerate(seq):
        if "BRA" in text:
            target = re.search(r"(\.L_x_\d+)", text.split("BRA", 1)[1])
            if target and labels.get(target.group(1), addr) < addr:
                out.append((at[labels[target.group(1)]], i))
    return out


def main(cubin: str, file: str, lo: int, hi: int) -> None:
    seq, labels = instructions(cubin)
    for s, e in loops(seq, labels):
        body = seq[s:e + 1]
        mine = sum(1 for _, w, _ in body if w and w[0] == file and lo <= w[1] <= hi)
        if mine > 5:
            files = collections.Counter(w[0] if w else "?" for _, w, _ in body)
            print(f"loop {seq[s][0]:#x}..{seq[e][0]:#x}: {e - s + 1} instructions; by file {files.most_common(8)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
