"""Bar chart of the Sampler's feature breakdown (case "sample_mix", written by benchmarks/sampler_mix.py):
one group of bars per mix, in the order the features are added, one bar per row count; the latest
measurement of each point wins (benchmarks/plot.latest), and each mix's label names the commits its
bars measured (mixes are not all re-run at every change).

    python benchmarks/plot_mix.py --csv benchmarks/results/results.csv --gpu H100 --out benchmarks/results/sample_mix.png
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import harness  # noqa: E402
from benchmarks.plot import latest  # noqa: E402
from benchmarks.sampler_mix import MIXES  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default=str(harness.DEFAULT_OUT))
    ap.add_argument("--gpu", default=None)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--out", default="sample_mix.png")
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in latest(harness.read_rows(a.csv), a.gpu)
            if r["case"] == "sample_mix" and r["impl"] == "sonicsampler" and not math.isnan(r["p50_us"])]
    pts, commits = {}, {}
    for r in rows:
        s = harness.parse_shape(r["shape"])
        if s["V"] == a.vocab:
            pts[(s["mix"], s["rows"])] = r["p50_us"]
            commits.setdefault(s["mix"], set()).add(r.get("git_commit", "?"))
    mixes = [m for m in MIXES if any(k[0] == m for k in pts)]
    counts = sorted({n for _, n in pts})
    fig, ax = plt.subplots(figsize=(1.1 * len(mixes) + 2, 4))
    width = 0.8 / max(len(counts), 1)
    for j, n in enumerate(counts):
        xs = [i + j * width for i, m in enumerate(mixes) if (m, n) in pts]
        ys = [pts[(m, n)] for m in mixes if (m, n) in pts]
        ax.bar(xs, ys, width, label=f"{n} rows")
    ax.set_xticks([i + width * (len(counts) - 1) / 2 for i in range(len(mixes))])
    # Each mix's bars may come from a different run: the label names the commits they measured.
    ax.set_xticklabels([f"{m}\n({', '.join(sorted(commits[m]))})" for m in mixes], rotation=30, ha="right",
                       fontsize=8)
    ax.set_ylabel("us (CUDA graph, median)")
    gpu = rows[0]["gpu"] if rows else ""
    ax.set_title(f"sonicsampler Sampler, V = {a.vocab}, mixes of benchmarks/sampler_mix.py ({gpu})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
