"""Each profiled kernel's stall reasons from an Nsight Compute report's raw page (CSV on stdin): the
kernel, its grid and duration, then every metric whose name says "stalled" (the WarpStateStats section
collects one per reason), largest first, and the issue-latency metrics. Metric names differ between ncu
versions, so they are matched by substring, not by full name.

    ncu -i report.ncu-rep --page raw --csv | python benchmarks/ncu_stalls.py [top]
"""
import csv
import sys


def _num(s: str) -> float:
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return float("nan")


def main(top: int = 14) -> None:
    rows = list(csv.reader(sys.stdin))
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        print("no kernel rows in the report")
        return
    names = rows[head]
    units = dict(zip(names, rows[head + 1])) if len(rows) > head + 1 else {}
    for r in rows[head + 1:]:
        d = dict(zip(names, r))
        if len(r) != len(names) or not d.get("Kernel Name") or _num(d.get("ID", "")) != _num(d.get("ID", "")):
            continue   # the units row, or a short line
        print(f"{d['Kernel Name'][:40]} grid {d.get('Grid Size', '?')} block {d.get('Block Size', '?')}: "
              f"{_num(d.get('gpu__time_duration.sum', '')):.2f} {units.get('gpu__time_duration.sum', '')}")
        lat = {k: _num(v) for k, v in d.items() if "latency" in k and "inst_issued" in k}
        for k, v in lat.items():
            print(f"   {k} {v:.2f}")
        stalls = {k: _num(v) for k, v in d.items() if "stalled" in k and _num(v) == _num(v)}
        for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:top]:
            print(f"   {k:75s} {v:9.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 14)
