"""Issue 5's batch with one long nucleus in 16 rows against the all-bounded batch, over the row counts and
vocabularies of sampler_mix.py CSVs (case "sample_mix", mixes long_nucleus_1_in_16 and top_p): per
vocabulary, the two times (left) and their ratio against the 1.5x target (right). A point's two times
come from the same file, so from one device call; later files win for a point they repeat.

    python benchmarks/plot_long_ratio.py --out benchmarks/results/h100/long_nucleus.png \
        benchmarks/results/h100/run226_sample_mix_final.csv benchmarks/results/h100/run227_sample_mix_*.csv
"""
from __future__ import annotations

import argparse
import csv
import re

LONG, BOUNDED = "long_nucleus_1_in_16", "top_p"
TARGET = 1.5


def points(paths: list[str]) -> dict[int, dict[int, tuple[float, float, str]]]:
    """{V: {rows: (long µs, bounded µs, commit)}} from the files, each pair from one file."""
    out: dict[int, dict[int, tuple[float, float, str]]] = {}
    for path in paths:
        seen: dict[tuple[int, int], dict[str, float]] = {}
        commit = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                m = re.fullmatch(r"rows=(\d+),V=(\d+),mix=(\w+)", r["shape"])
                if r["case"] != "sample_mix" or not m or m.group(3) not in (LONG, BOUNDED):
                    continue
                key = (int(m.group(2)), int(m.group(1)))
                seen.setdefault(key, {})[m.group(3)] = float(r["p50_us"])
                commit[key] = r["git_commit"]
        for (v, n), t in seen.items():
            if LONG in t and BOUNDED in t:
                out.setdefault(v, {})[n] = (t[LONG], t[BOUNDED], commit[(v, n)])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csvs", nargs="+")
    ap.add_argument("--out", default="long_nucleus.png")
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = points(a.csvs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for v in sorted(pts):
        rows = sorted(pts[v])
        lng = [pts[v][n][0] for n in rows]
        bnd = [pts[v][n][1] for n in rows]
        line = axes[0].plot(rows, lng, "o-", label=f"1 long nucleus in 16, V = {v}")[0]
        axes[0].plot(rows, bnd, "s--", color=line.get_color(), label=f"all bounded, V = {v}")
        axes[1].plot(rows, [x / y for x, y in zip(lng, bnd)], "o-", color=line.get_color(), label=f"V = {v}")
        for n, x, y in zip(rows, lng, bnd):
            axes[1].annotate(f"{x / y:.2f}", (n, x / y), textcoords="offset points", xytext=(0, 6), ha="center",
                             fontsize=7)
    axes[0].set(xscale="log", xlabel="rows", ylabel="µs (CUDA-graph replay, median)",
                title="sampler launch pair, bf16, H100")
    axes[1].axhline(TARGET, color="gray", ls=":", label="target 1.5x")
    axes[1].set(xscale="log", xlabel="rows", ylabel="long / all bounded", title="ratio (issue 5)")
    commits = sorted({c for v in pts for (_, _, c) in pts[v].values()})
    fig.suptitle(f"commits {', '.join(commits)}", fontsize=8)
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
