"""The `sonicsampler` command: `bench` (GPU benchmarks, CPU demonstration without a GPU) and `demo`.

Triton decides at decoration time whether a `@triton.jit` kernel is compiled or interpreted: the
kernels run on a CPU only when TRITON_INTERPRET=1 was set before sonicsampler's kernel modules were
imported. This module therefore imports nothing of sonicsampler at top level; `main` decides GPU or
CPU with torch first, sets (or clears) the variable, and only then imports the kernels. When they were
already imported in the other mode (the package's `__init__` imports them, and `python -m` or the
console script imports the package before `main` runs), the demonstration runs in a child Python
started with the variable set, so the choice always takes effect.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

DEMO_BOUND = 32   # the fused sampler's candidate bound in the demo: small, so the interpreter is quick

# Set in the child of a re-run, so that a child whose kernels still have the wrong mode says so
# instead of starting another child.
_CHILD_ENV = "SONICSAMPLER_CLI_CHILD"

DEMO_ROWS, DEMO_VOCAB, DEMO_K, DEMO_BLOCK, DEMO_SEED = 4, 3000, 16, 256, 0


# ------------------------------------------------------------------------------------------------
# Environment: GPU presence, the interpreter switch, the repository's benchmarks folder
# ------------------------------------------------------------------------------------------------
def _gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _env_interpret() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")


def _kernel_mode() -> str | None:
    """How sonicsampler's already imported Triton kernels were decorated: 'interpreted', 'compiled',
    or None when no kernel module has been imported yet (so setting TRITON_INTERPRET still works)."""
    mods = [m for name, m in list(sys.modules.items())
            if m is not None and (name == "sonicsampler.kernels" or name.startswith("sonicsampler.kernels."))]
    if not mods:
        return None
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for m in mods:
        for obj in list(vars(m).values()):
            if isinstance(obj, InterpretedFunction):
                return "interpreted"
            if isinstance(obj, JITFunction):
                return "compiled"
    return None


def benchmarks_dir() -> Path:
    """The repository's `benchmarks` folder (absent in an installed wheel): <repo>/src/sonicsampler/cli.py
    -> <repo>/benchmarks."""
    return Path(__file__).resolve().parents[2] / "benchmarks"


# ------------------------------------------------------------------------------------------------
# Demonstration
# ------------------------------------------------------------------------------------------------
def _demo(args: argparse.Namespace, reason: str = "") -> int:
    if reason:
        print(reason, flush=True)
    interpret = args.cpu or not _gpu_available() or _env_interpret()
    want = "interpreted" if interpret else "compiled"
    have = _kernel_mode()
    if have is not None and have != want:
        return _demo_in_child(args, interpret, have)
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    elif "TRITON_INTERPRET" in os.environ:
        del os.environ["TRITON_INTERPRET"]
    return _run_demo(args, device="cpu" if interpret else "cuda")


def _demo_in_child(args: argparse.Namespace, interpret: bool, have: str) -> int:
    if os.environ.get(_CHILD_ENV):
        print(f"error: sonicsampler's kernels were imported {have} although this run needs them "
              f"{'interpreted' if interpret else 'compiled'}; TRITON_INTERPRET is "
              f"{os.environ.get('TRITON_INTERPRET', 'unset')!r}", file=sys.stderr)
        return 1
    env = dict(os.environ)
    env[_CHILD_ENV] = "1"
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    argv = ["demo", "--rows", str(args.rows), "--vocab", str(args.vocab), "-k", str(args.k),
            "--block", str(args.block), "--seed", str(args.seed)] + (["--cpu"] if args.cpu else [])
    sys.stdout.flush()
    sys.stderr.flush()
    return subprocess.call([sys.executable, "-m", "sonicsampler", *argv], env=env)


def _fmt_ids(ids: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def _run_demo(args: argparse.Namespace, device: str) -> int:
    import torch

    import sonicsampler
    from sonicsampler import reference
    from sonicsampler.params import SamplingParams
    from sonicsampler.tuning import TopKConfig

    if device == "cpu":
        from sonicsampler import interpreter_speedup
        interpreter_speedup.install()   # the same kernels, about twice as fast under the interpreter
    topk = sonicsampler.topk if callable(sonicsampler.topk) else sonicsampler.topk.topk
    n, v, k, seed = args.rows, args.vocab, args.k, args.seed
    cfg = TopKConfig(block=args.block)
    where = "CPU under Triton's interpreter (TRITON_INTERPRET=1)" if device == "cpu" else \
        f"GPU ({torch.cuda.get_device_name(0)}), compiled Triton kernels"
    print(f"sonicsampler demo: top-k on the {where}")
    print(f"logits: {n} x {v} bf16 ~ N(0, 2^2), torch seed {seed}; k = {k}; {cfg}")
    gen = torch.Generator().manual_seed(seed)
    logits = (2.0 * torch.randn(n, v, generator=gen)).to(torch.bfloat16).to(device)

    t0 = time.perf_counter()
    try:
        values, indices = topk(logits, k, config=cfg)
        if device != "cpu":
            torch.cuda.synchronize()
    except Exception as e:  # a broken kernel is a failed demonstration, not a traceback
        print(f"sonicsampler.topk failed: {type(e).__name__}: {e}")
        print("exact: no")
        return 1
    seconds = time.perf_counter() - t0
    ref_values, ref_indices = reference.topk(logits, k)

    values, indices = values.cpu(), indices.cpu()
    ref_values, ref_indices = ref_values.cpu(), ref_indices.cpu()
    same_v = (values == ref_values) | (torch.isnan(values) & torch.isnan(ref_values))
    diff = (values.float() - ref_values.float()).abs()
    diff = torch.where(same_v, torch.zeros_like(diff), diff.nan_to_num(nan=float("inf")))
    rows_exact = same_v.all(dim=1) & (indices == ref_indices).all(dim=1)
    shown = min(5, k)
    print()
    head = f"top-{shown} indices"
    width = max(len(head), max(len(_fmt_ids(indices[i, :shown].tolist())) for i in range(n)) if n else 0)
    print(f"{'row':>3}  {head:<{width}}  {'max |diff|':>10}  indices equal")
    for i in range(n):
        ids = _fmt_ids(indices[i, :shown].tolist())
        eq = "yes" if bool((indices[i] == ref_indices[i]).all()) else "NO"
        print(f"{i:>3}  {ids:<{width}}  {diff[i].max().item():>10.3g}  {eq}")
    exact = bool(rows_exact.all())
    print(f"exact: {'yes' if exact else 'no'}  (sonicsampler.topk against sonicsampler.reference.topk: "
          f"values and indices of all {n} rows; kernels took {seconds:.2f} s)")

    # Sampling with the reference implementation, for a few SamplingParams mixes (seeded: reproducible).
    print()
    print(f"reference.sample and the fused sonicsampler.sample (candidate bound {DEMO_BOUND}) on the same "
          f"logits, positions 0..{n - 1} (Philox, seeded):")
    mixes = [
        ("greedy (temperature=0)", SamplingParams(temperature=0.0)),
        ("temperature=0.8, top_k=50, seed=1234", SamplingParams(temperature=0.8, top_k=50, seed=1234)),
        ("top_p=0.9, min_p=0.05, seed=7", SamplingParams(top_p=0.9, min_p=0.05, seed=7)),
        ("temperature=1.5, top_k=5, seed=7", SamplingParams(temperature=1.5, top_k=5, seed=7, logprobs=0)),
    ]
    positions = list(range(n))
    label = max(len(name) for name, _ in mixes)
    greedy_tokens = None
    fused_ok = True
    for name, params in mixes:
        out = reference.sample(logits.cpu(), params, positions=positions)
        toks = out.tokens.tolist()
        extra = ""
        if params.logprobs is not None:
            extra = "  logprob (raw) " + ", ".join(f"{x:.3f}" for x in out.logprob.tolist())
        print(f"  {name:<{label}}  reference tokens {_fmt_ids(toks)}{extra}")
        fused = sonicsampler.sample(logits, params, positions=positions, bound=DEMO_BOUND, block=args.block)
        row_exact = fused.exact.tolist()
        same = all(a == b for a, b, e in zip(fused.tokens.tolist(), toks, row_exact) if e)
        fused_ok &= same
        bounded = [f"row {i}: bounded, dropped mass {m:.3f}" for i, (e, m)
                   in enumerate(zip(row_exact, fused.dropped_mass.tolist())) if not e]
        print(f"  {'':<{label}}  fused tokens     {_fmt_ids(fused.tokens.tolist())}  equal on exact rows: "
              f"{'yes' if same else 'no'}{'  (' + '; '.join(bounded) + ')' if bounded else ''}")
        if params.greedy:
            greedy_tokens = toks
    if greedy_tokens is not None and k >= 1:
        agree = greedy_tokens == indices[:, 0].tolist()
        print(f"  greedy tokens equal sonicsampler.topk's top-1 indices: {'yes' if agree else 'no'}")
    return 0 if exact and fused_ok else 1


# ------------------------------------------------------------------------------------------------
# Benchmarks
# ------------------------------------------------------------------------------------------------
_BENCH_DESCRIPTION = (
    "On a machine with a CUDA GPU: time sonicsampler's kernels against their baselines (PyTorch, "
    "FlashInfer where installed) with the repository's benchmark harness (benchmarks/run.py), "
    "CUDA-graph replays, rows appended to a CSV, a progress bar on a terminal (tqdm, from the "
    "'bench' extra; one line per measurement otherwise), then the speedup table. Needs the "
    "repository checkout: an installed wheel has no benchmarks folder. On a machine without a GPU it "
    "says so and runs the CPU demonstration (`sonicsampler demo`) instead, a small one with --quick.")


def _load_bench_run():
    """benchmarks/run.py as a module, or None when the benchmarks folder is absent."""
    bdir = benchmarks_dir()
    if not (bdir / "run.py").is_file():
        return None
    root = str(bdir.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks import run as bench_run

    return bench_run


def _bench(argv: list[str]) -> int:
    bench_run = _load_bench_run()
    if bench_run is not None:
        # Parse with benchmarks/run.py's own parser (its options, its help), named after this command;
        # its main() then does the work with the same arguments.
        p = bench_run.parser()
        p.prog = "sonicsampler bench"
        p.description = _BENCH_DESCRIPTION
        args = p.parse_args(argv)
        if args.merge or args.list:  # bookkeeping: no GPU needed
            return bench_run.main(argv)
    else:
        if "-h" in argv or "--help" in argv:
            print("usage: sonicsampler bench [options of benchmarks/run.py]\n\n" + _BENCH_DESCRIPTION
                  + f"\n\nThe benchmarks folder was not found at {benchmarks_dir()}, so its options "
                  "cannot be listed here.")
            return 0
    if not _gpu_available():
        reason = "No CUDA GPU found (torch.cuda.is_available() is False): the benchmarks need one; " \
                 "running the CPU demonstration under Triton's interpreter instead."
        # --quick: a small demonstration (2 rows of 700 tokens) for a quick check.
        small = ["--rows", "2", "--vocab", "700", "-k", "8"] if "--quick" in argv else []
        return _demo(_demo_parser().parse_args(small), reason=reason)
    if bench_run is None:
        print(f"error: the benchmarks folder is not there ({benchmarks_dir()} does not exist): "
              "`sonicsampler bench` runs from a checkout of the sonicsampler repository "
              "(pip install -e .), not from an installed wheel.", file=sys.stderr)
        return 2
    if _env_interpret():
        print("error: TRITON_INTERPRET is set: the benchmarks time compiled kernels; unset it.", file=sys.stderr)
        return 2
    return bench_run.main(argv)


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------
_DEMO_DESCRIPTION = (
    "Run sonicsampler.topk on a few rows of random bf16 logits and compare it exactly (indices and "
    "values) with sonicsampler.reference.topk, print the top indices and 'exact: yes/no', then draw "
    "tokens with reference.sample for a few seeded SamplingParams mixes. Without a GPU (or with "
    "--cpu) the kernels run on the CPU under Triton's interpreter; with one, compiled on the GPU. "
    "Exit status 0 when the kernel's output is exact, 1 otherwise.")


def _add_demo_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--rows", type=int, default=DEMO_ROWS, help=f"rows of logits (default {DEMO_ROWS})")
    p.add_argument("--vocab", type=int, default=DEMO_VOCAB, help=f"vocabulary size (default {DEMO_VOCAB})")
    p.add_argument("-k", type=int, default=DEMO_K, help=f"k of the top-k (default {DEMO_K})")
    p.add_argument("--block", type=int, default=DEMO_BLOCK,
                   help=f"stage-1 tile size, TopKConfig(block=...) (default {DEMO_BLOCK})")
    p.add_argument("--seed", type=int, default=DEMO_SEED, help=f"seed of the random logits (default {DEMO_SEED})")
    p.add_argument("--cpu", action="store_true", help="use the CPU and Triton's interpreter even if a GPU is present")
    return p


def _demo_parser() -> argparse.ArgumentParser:
    return _add_demo_options(argparse.ArgumentParser(prog="sonicsampler demo", description=_DEMO_DESCRIPTION))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sonicsampler",
        description="sonicsampler: exact LLM sampling kernels in Triton. Subcommands: `bench` times "
                    "the kernels on a GPU (falls back to the demonstration on a CPU); `demo` checks "
                    "sonicsampler.topk against the reference and shows sampling.",
        epilog="`sonicsampler COMMAND --help` describes a command's options.")
    sub = p.add_subparsers(dest="command", metavar="{bench,demo}", required=True)
    # bench's options belong to benchmarks/run.py: they are parsed (and its --help printed) in _bench.
    sub.add_parser("bench", add_help=False, description=_BENCH_DESCRIPTION,
                   help="GPU benchmarks against the baselines, then the speedup table "
                        "[--case topk|sample|verify] [--quick] [--rows R,..] [--vocab V,..] [--out CSV]; "
                        "without a GPU: the CPU demonstration")
    _add_demo_options(sub.add_parser("demo", description=_DEMO_DESCRIPTION,
                                     help="check sonicsampler.topk exactly against the reference on small "
                                          "random logits (CPU interpreter without a GPU) and show sampling"))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    args, rest = p.parse_known_args(argv)
    if args.command == "bench":
        return _bench(argv[argv.index("bench") + 1:])
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    return _demo(args)


if __name__ == "__main__":
    sys.exit(main())
