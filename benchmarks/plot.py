"""Plot results.csv: one PNG per case, latency (p50, p20-p80 band) against rows, one line per implementation.

Panels: one column per vocabulary size; for cases with more swept keys (verify's gamma), one row of
panels per value. When a (case, shape, implementation, gpu) was measured more than once, the latest
row wins, so re-runs replace old points instead of doubling them. Rows of earlier code kept from A/B
runs ("sonicsampler@<sha>") are left out.

    python benchmarks/plot.py [--csv benchmarks/results/results.csv] [--out benchmarks/results] [--gpu H100]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import harness  # noqa: E402

X_KEYS = ("rows", "B")  # the x axis: whichever of these the shape has


def latest(rows: list[dict], gpu: str | None = None) -> list[dict]:
    keep: dict[tuple, dict] = {}
    for r in rows:
        if gpu and gpu.lower() not in r.get("gpu", "").lower():
            continue
        if "@" in r["impl"]:   # an A/B run's snapshot of earlier code ("sonicsampler@<sha>"): not plotted
            continue
        key = (r["case"], r["shape"], r["impl"], r.get("gpu", ""))
        if key not in keep or r.get("date", "") >= keep[key].get("date", ""):
            keep[key] = r
    return list(keep.values())


def series(rows: list[dict], case: str):
    """{(panel_row_label, V): {impl: [(x, p20, p50, p80)]}} for one case, plus the x-axis key."""
    rs = [r for r in rows if r["case"] == case]
    shapes = [harness.parse_shape(r["shape"]) for r in rs]
    xkey = next((k for k in X_KEYS if shapes and k in shapes[0]), None)
    if xkey is None:
        return {}, None
    swept = {k for k in shapes[0] if len({s.get(k) for s in shapes}) > 1} - {xkey, "V"}
    several_gpus = len({r.get("gpu", "") for r in rs}) > 1
    out: dict = {}
    for r, s in zip(rs, shapes):
        label = ",".join(f"{k}={s[k]}" for k in sorted(swept))
        name = f"{r['impl']} ({r.get('gpu', '')})" if several_gpus else r["impl"]
        pts = out.setdefault((label, s.get("V")), {}).setdefault(name, [])
        pts.append((s[xkey], r["p20_us"], r["p50_us"], r["p80_us"]))
    return out, xkey


def plot_case(rows: list[dict], case: str, out_dir: Path, plt) -> Path | None:
    data, xkey = series(rows, case)
    if not data:
        return None
    labels = sorted({lab for lab, _ in data})
    vocabs = sorted({v for _, v in data})
    impls = sorted({name for lines in data.values() for name in lines})
    color = {name: f"C{n % 10}" for n, name in enumerate(impls)}  # one colour per impl in every panel
    fig, axes = plt.subplots(len(labels), len(vocabs), squeeze=False, sharey="row",
                             figsize=(4.2 * len(vocabs), 3.4 * len(labels)))
    for i, lab in enumerate(labels):
        for j, V in enumerate(vocabs):
            ax = axes[i][j]
            xticks: set = set()
            for impl, pts in sorted(data.get((lab, V), {}).items()):
                pts = sorted(p for p in pts if not math.isnan(p[2]))
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                xticks.update(xs)
                ax.plot(xs, [p[2] for p in pts], marker="o", ms=3, label=impl, color=color[impl])
                ax.fill_between(xs, [p[1] for p in pts], [p[3] for p in pts], alpha=0.2, color=color[impl])
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(xticks), [str(x) for x in sorted(xticks)])  # rows as numbers, not 2^n
            ax.set_yscale("log")
            ax.set_title(f"V={V}" + (f", {lab}" if lab else ""), fontsize=9)
            ax.set_xlabel(xkey)
            if j == 0:
                ax.set_ylabel("latency, us (p50; band p20-p80)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"{case}: CUDA-graph replay latency", fontsize=11)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{case}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", default=str(harness.DEFAULT_OUT))
    p.add_argument("--out", default=str(harness.DEFAULT_OUT.parent), help="folder for <case>.png")
    p.add_argument("--gpu", default=None, help="keep rows whose gpu name contains this text")
    args = p.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on the machines that run this
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots written (pip install matplotlib)")
        return 0
    rows = latest(harness.read_rows(args.csv), args.gpu)
    for case in dict.fromkeys(r["case"] for r in rows):
        path = plot_case(rows, case, Path(args.out), plt)
        print(f"{case}: {path}" if path else f"{case}: nothing to plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
