"""Summarise `ncu -i REPORT --page source --csv --print-source sass`: per kernel, the instructions
executed in all and the SASS lines holding the most stall samples (with their instruction counts), so
that a profile's hot spots come back from the GPU machine as a few lines of text.

    python benchmarks/ncu_hotspots.py sass.csv [top]
"""
from __future__ import annotations

import csv
import sys


def _num(s: str) -> float:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def blocks(lines: list[str]):
    """Split the CSV into tables: a header row starts each (ncu prints one per kernel, after a line naming
    the kernel when there are several)."""
    title, rows, header = "", [], None
    for rec in csv.reader(lines):
        if not rec:
            continue
        if any("Address" == c or "Source" == c for c in rec) and len(rec) > 3:
            if header is not None:
                yield title, header, rows
            header, rows = rec, []
        elif header is None or len(rec) < len(header) // 2:
            if header is not None and rows:
                yield title, header, rows
                header, rows = None, []
            title = " ".join(rec)[:160]
        else:
            rows.append(rec)
    if header is not None:
        yield title, header, rows


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    lines = open(path, errors="replace").read().splitlines()
    found = False
    for title, header, rows in blocks(lines):
        found = True
        col = {name: i for i, name in enumerate(header)}
        stall = next((i for n, i in col.items() if "Warp Stall Sampling (All" in n), None)
        execd = next((i for n, i in col.items() if n.startswith("Instructions Executed")), None)
        src = col.get("Source", 1)
        print(f"== {path} :: {title}")
        print(f"   columns: {header[:12]}")
        if stall is None or execd is None:
            print("   (no stall or instruction columns)")
            continue
        total_i = sum(_num(r[execd]) for r in rows if len(r) > execd)
        total_s = sum(_num(r[stall]) for r in rows if len(r) > stall)
        print(f"   {len(rows)} SASS lines, {total_i:.0f} warp-instructions executed, {total_s:.0f} stall samples")
        hot = sorted((r for r in rows if len(r) > max(stall, execd)), key=lambda r: -_num(r[stall]))[:top]
        for r in hot:
            print(f"   {_num(r[stall]) / max(total_s, 1) * 100:5.1f}%  exec {_num(r[execd]):>10.0f}  "
                  f"{r[0]:>6s}  {r[src][:90]}")
    if not found:
        print(f"== {path}: no table found; first lines:")
        print("\n".join(lines[:8]))


if __name__ == "__main__":
    main()
