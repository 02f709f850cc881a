"""Command line for the benchmarks: time the registered implementations, append to results.csv.

    python benchmarks/run.py --case topk --rows 1,32,128 --vocab 151936 --baseline torch.topk --quick
    python benchmarks/run.py --list
    python benchmarks/run.py --merge fetched/results.csv     # add a GPU run's rows to the repo's file
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/run.py` from anywhere

from benchmarks import harness  # noqa: E402


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Time sampling kernels against their baselines with CUDA-graph "
                                "replays; rows are appended to one CSV and a speedup table is printed.")
    p.add_argument("--case", type=_names, default=None, help="comma list of cases (topk,sample,verify); default all")
    p.add_argument("--rows", type=_ints, default=None, help="comma list of rows (B for verify), overrides the grid")
    p.add_argument("--vocab", type=_ints, default=None, help="comma list of vocabulary sizes, overrides the grid")
    p.add_argument("--gamma", type=_ints, default=None, help="comma list of draft lengths (verify)")
    p.add_argument("--impl", type=_names, default=None, help="comma list of implementation names to run")
    p.add_argument("--baseline", default=None, help="implementation the ratios divide by (default per case)")
    p.add_argument("--quick", action="store_true", help="tiny grid and short timing budget")
    p.add_argument("--budget-ms", type=float, default=None, help="replay time per measurement (default 500, quick 100)")
    p.add_argument("--out", default=str(harness.DEFAULT_OUT), help="results CSV to append to")
    p.add_argument("--list", action="store_true", help="list cases and implementations, then exit")
    p.add_argument("--merge", metavar="CSV", default=None, help="append the rows of CSV to --out, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.merge:
        print(f"{harness.merge(args.merge, args.out)} rows appended to {args.out}")
        return 0
    from benchmarks import baselines, ours  # noqa: F401  (registration happens at import)

    if args.list:
        for case, impls in harness.IMPLS.items():
            print(f"{case} (baseline {harness.CASES[case].baseline}): {', '.join(impls)}")
        return 0
    harness.run(cases=args.case, rows=args.rows, vocab=args.vocab, gamma=args.gamma, impls=args.impl,
                baseline=args.baseline, out=args.out, quick=args.quick, budget_ms=args.budget_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
