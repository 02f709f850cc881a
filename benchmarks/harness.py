"""Benchmark harness: registries of cases and implementations, a CUDA-graph timer, CSV rows, ratio table.

A *case* (``topk``, ``sample``, ``verify``) owns an input maker and a grid of shapes. An *implementation*
is registered per case as ``register(case, name, factory)``: ``factory(cfg)`` is called once per shape
(imports, compilation, signature checks belong there) and returns ``call(inputs)``, which runs one
call on one prepared input set. The harness makes several input sets per shape so that the timed
graph can rotate among them and not replay out of a warm L2.

Everything except ``cuda_graph_timer`` and ``environment`` is plain Python, so tests run it on a CPU
with a fake timer.
"""
from __future__ import annotations

import csv
import datetime as _dt
import itertools
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "results.csv"
FIELDS = ["case", "shape", "impl", "p20_us", "p50_us", "p80_us", "gpu", "torch", "triton",
          "git_commit", "date", "note"]
DEFAULT_L2_BYTES = 50 * 1024 * 1024  # H100's L2; used only when the device does not report it
ROTATE_FACTOR = 4  # rotate copies until the inputs of one graph span >= 4x L2


class Skip(Exception):
    """Raised by a factory whose implementation cannot run here (e.g. package absent): a row, not a crash."""


@dataclass
class Case:
    name: str
    make_inputs: Callable[[dict, Any, int], dict]  # (cfg, device, seed) -> tensors of one call
    grid: dict  # key -> list of values (swept) or scalar (constant); key order = shape-string order
    quick_grid: dict
    row_key: str = "rows"  # the key that --rows overrides (``B`` for verify)
    baseline: str = ""  # default name the ratio table divides by


@dataclass
class Impl:
    name: str
    factory: Callable[[dict], Callable[[dict], Any]]
    note: str = ""  # copied into every successful row (e.g. "unsorted output")


CASES: dict[str, Case] = {}
IMPLS: dict[str, dict[str, Impl]] = {}


def register_case(case: Case) -> Case:
    CASES[case.name] = case
    IMPLS.setdefault(case.name, {})
    return case


def register(case: str, name: str, factory: Callable[[dict], Callable[[dict], Any]], note: str = "") -> None:
    """Register (or replace) implementation ``name`` of ``case``; registration order is column order."""
    IMPLS.setdefault(case, {})[name] = Impl(name, factory, note)


def implementations(case: str) -> dict[str, Impl]:
    return dict(IMPLS.get(case, {}))


# ---------------------------------------------------------------- shapes

def expand(grid: dict, overrides: dict | None = None) -> list[dict]:
    """Cartesian product of a grid; ``overrides`` replaces a key's values (only keys the grid has)."""
    g = dict(grid)
    for k, v in (overrides or {}).items():
        if v is not None and k in g:
            g[k] = list(v)
    keys = list(g)
    axes = [v if isinstance(v, (list, tuple)) else [v] for v in g.values()]
    return [dict(zip(keys, combo)) for combo in itertools.product(*axes)]


def shape_str(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items())


def parse_shape(s: str) -> dict:
    out: dict[str, Any] = {}
    for part in s.split(","):
        k, _, v = part.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


# ---------------------------------------------------------------- numbers

def percentiles(samples: Iterable[float], qs=(20, 50, 80)) -> list[float]:
    """Linear-interpolated percentiles (numpy's default), without needing numpy."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        return [math.nan] * len(qs)
    out = []
    for q in qs:
        pos = (len(xs) - 1) * q / 100.0
        lo, hi = math.floor(pos), math.ceil(pos)
        out.append(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))
    return out


def host_time(call: Callable[[], Any], rounds: int = 5, reps: int = 100) -> float:
    """Host µs per call of `call` without synchronisation (eager launches: the CPU cost an engine pays
    per step), the fastest of `rounds` rounds of `reps` calls: one process's rounds varied up to 2x with
    identical code on the H100 (runs 97-104)."""
    import torch
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        best = min(best, (time.perf_counter() - t0) / reps * 1e6)
        torch.cuda.synchronize()
    return best


def tensor_bytes(obj: Any) -> int:
    """Bytes held by the tensors in a (nested) dict/list of inputs."""
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    if hasattr(obj, "element_size") and hasattr(obj, "numel"):
        return obj.element_size() * obj.numel()
    return 0


def plan_copies(set_bytes: int, l2_bytes: int, max_copies: int) -> tuple[int, str]:
    """How many input sets to rotate so that one pass over them spans ROTATE_FACTOR x L2.

    Returns (copies, note); the note says so when the cap leaves the L2 warm, as results for small
    inputs then include L2 hits that a serving step might not get.
    """
    want = ROTATE_FACTOR * l2_bytes
    if set_bytes <= 0 or set_bytes >= want:
        return 1, ""
    copies = min(max_copies, math.ceil(want / set_bytes))
    if copies * set_bytes < want:
        return copies, (f"L2 warm: {copies} input copies x {set_bytes / 2**20:.2f} MiB "
                        f"< {ROTATE_FACTOR}x L2 ({l2_bytes / 2**20:.0f} MiB)")
    return copies, f"rotating {copies} input copies"


def one_line(err: BaseException, limit: int = 400) -> str:
    """An exception as one CSV-friendly line (Inductor errors span pages)."""
    msg = " ".join(str(err).split())
    text = f"{type(err).__name__}: {msg}" if msg else type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- timing (GPU only)

def cuda_graph_timer(fns: list[Callable[[], Any]], quick: bool = False, budget_ms: float | None = None,
                     target_graph_us: float = 3000.0, max_calls: int = 512) -> list[float]:
    """Per-call microseconds, one sample per replay of a CUDA graph of many unrolled calls.

    Calls cycle through ``fns`` (one per input copy) inside the graph, so consecutive calls read
    different memory. A graph holds at least one call per copy and about ``target_graph_us`` of work,
    so the replay launch is amortised; the number of replays fills ``budget_ms``. Percentiles are over
    replays (each a mean over the calls of one replay), as in triton's do_bench_cudagraph.
    """
    import torch

    budget_ms = budget_ms if budget_ms is not None else (100.0 if quick else 500.0)
    min_rep, max_rep = (5, 50) if quick else (10, 200)
    # Warm-up outside the capture, on a side stream as PyTorch asks: the first call compiles
    # (torch.compile, FlashInfer JIT, Triton) and allocates library workspaces, none of which a
    # capture may do.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for f in fns:
            f()
        torch.cuda.synchronize()
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        for f in fns:
            f()
        t1.record()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    # Eager time includes launch gaps, so it over-estimates small calls: the graph is merely shorter.
    est_us = max(t0.elapsed_time(t1) * 1000.0 / len(fns), 1.0)
    reps = max(1, math.ceil(target_graph_us / est_us / len(fns)))
    n_calls = max(len(fns), min(max_calls, reps * len(fns)))
    n_calls -= n_calls % len(fns)  # whole rotations only, so every copy weighs the same

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(n_calls):
            fns[i % len(fns)]()
    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    t0.record()
    graph.replay()
    t1.record()
    torch.cuda.synchronize()
    graph_ms = max(t0.elapsed_time(t1), 1e-3)
    n_rep = int(min(max_rep, max(min_rep, budget_ms / graph_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for s, e in zip(starts, ends):
        s.record()
        graph.replay()
        e.record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) * 1000.0 / n_calls for s, e in zip(starts, ends)]
    del graph
    return samples


def l2_bytes(device: Any) -> int:
    try:
        import torch

        if torch.device(device).type == "cuda":
            return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or DEFAULT_L2_BYTES
    except Exception:
        pass
    return DEFAULT_L2_BYTES


def git_commit() -> str:
    """Short commit (+dirty); the GPU machine gets a tree without .git, so BENCH_GIT_COMMIT can say it."""
    env = os.environ.get("BENCH_GIT_COMMIT")
    if env:
        return env
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "benchmarks"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except Exception:
        return "unknown"


def environment(device: Any = "cuda") -> dict:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except Exception:
        triton_version = "absent"
    gpu = "cpu"
    if torch.device(device).type == "cuda" and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(device)
    return {"gpu": gpu, "torch": torch.__version__, "triton": triton_version, "git_commit": git_commit(),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


# ---------------------------------------------------------------- results

def append_rows(path: Path | str, rows: list[dict]) -> None:
    """Append rows to the one results file, writing the header when the file is new."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in FIELDS})


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return v


def read_rows(path: Path | str) -> list[dict]:
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("p20_us", "p50_us", "p80_us"):
            try:
                r[k] = float(r[k])
            except (TypeError, ValueError):
                r[k] = math.nan
    return rows


def merge(src: Path | str, dst: Path | str = DEFAULT_OUT) -> int:
    """Append the rows of a results file fetched from the GPU machine to the repository's one."""
    rows = read_rows(src)
    append_rows(dst, rows)
    return len(rows)


def ratio_table(rows: list[dict], baselines: dict[str, str]) -> str:
    """Per case: baseline p50 in us, then time(baseline)/time(impl) per implementation (>1 = faster).

    Failed or skipped cells print as 'fail'/'skip'; a case whose baseline has no time prints p50s.
    """
    out: list[str] = []
    for case in dict.fromkeys(r["case"] for r in rows):
        rs = [r for r in rows if r["case"] == case]
        shapes = list(dict.fromkeys(r["shape"] for r in rs))
        names = list(dict.fromkeys(r["impl"] for r in rs))
        cell = {(r["shape"], r["impl"]): r for r in rs}
        base = baselines.get(case, "")
        has_base = base in names
        out.append(f"\n== {case}: " + (f"speedup = time({base}) / time(impl), p50" if has_base
                                        else f"p50 in us (baseline {base or '-'} not measured)"))
        cols = ([f"{base} us"] + [n for n in names if n != base]) if has_base else names
        table = [["shape"] + cols]
        for s in shapes:
            b = cell.get((s, base), {}).get("p50_us", math.nan) if has_base else math.nan
            line = [s]
            for c in cols:
                name = base if (has_base and c == f"{base} us") else c
                r = cell.get((s, name))
                t = r["p50_us"] if r else math.nan
                if r is None:
                    line.append("-")
                elif isinstance(t, float) and math.isnan(t):
                    line.append("skip" if str(r.get("note", "")).startswith("skipped") else "fail")
                elif has_base and name != base:
                    line.append("-" if math.isnan(b) else f"{b / t:.2f}x")
                else:
                    line.append(f"{t:.1f}")
            table.append(line)
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                for row in table]
    return "\n".join(out)


# ---------------------------------------------------------------- runner

def _progress(total: int):
    """A tqdm bar on a terminal; None (one printed line per measurement) otherwise: a captured log
    such as the GPU machine's reply keeps whole result lines instead of carriage-return updates."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, unit="meas", dynamic_ncols=True, file=sys.stderr)
    except ImportError:
        return None


def run(cases: Iterable[str] | None = None, rows: list[int] | None = None, vocab: list[int] | None = None,
        gamma: list[int] | None = None, impls: Iterable[str] | None = None, baseline: str | None = None,
        out: Path | str = DEFAULT_OUT, quick: bool = False, budget_ms: float | None = None,
        device: str = "cuda", max_copies: int = 64, timer: Callable[..., list[float]] | None = None,
        env: dict | None = None) -> list[dict]:
    """Time every registered implementation of each case on each shape; append rows to ``out``.

    ``baseline`` names the implementation the ratio table divides by (a name a case lacks falls back
    to that case's default). Rows are written as they are measured, so a run cut short keeps them.
    """
    names = list(cases) if cases else list(CASES)
    unknown = [c for c in names if c not in CASES]
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; known: {list(CASES)}")
    timer = timer or cuda_graph_timer
    env = env or environment(device)
    l2 = l2_bytes(device)
    wanted = set(impls) if impls else None
    plan = []
    for c in names:
        case = CASES[c]
        grid = case.quick_grid if quick else case.grid
        cfgs = expand(grid, {case.row_key: rows, "V": vocab, "gamma": gamma})
        chosen = [i for n, i in IMPLS.get(c, {}).items() if wanted is None or n in wanted]
        plan.append((case, cfgs, chosen))
    bar = _progress(sum(len(cfgs) * len(ch) for _, cfgs, ch in plan))
    results: list[dict] = []
    for case, cfgs, chosen in plan:
        for cfg in cfgs:
            shape = shape_str(cfg)
            rows_here = _measure_shape(case, cfg, shape, chosen, device, l2, max_copies, timer, quick,
                                       budget_ms, env, out, bar)
            results += rows_here
    if bar is not None:
        bar.close()
    bases = {c.name: (baseline if baseline in IMPLS.get(c.name, {}) else c.baseline) for c, _, _ in plan}
    print(ratio_table(results, bases))
    print(f"\n{len(results)} rows appended to {out}")
    return results


def _measure_shape(case, cfg, shape, chosen, device, l2, max_copies, timer, quick, budget_ms, env, out, bar):
    base = {"case": case.name, "shape": shape, **env}
    nan = {"p20_us": math.nan, "p50_us": math.nan, "p80_us": math.nan}
    rows: list[dict] = []
    try:
        first = case.make_inputs(cfg, device, 0)
        copies, l2_note = plan_copies(tensor_bytes(first), l2, max_copies)
        inputs = [first] + [case.make_inputs(cfg, device, s) for s in range(1, copies)]
    except Exception as e:  # e.g. out of memory for the largest shapes: every implementation says so
        inputs, l2_note = None, ""
        input_err = "inputs failed: " + one_line(e)
    for impl in chosen:
        row = {**base, "impl": impl.name, **nan}
        if inputs is None:
            row["note"] = input_err
        else:
            try:
                call = impl.factory(cfg)
                fns = [(lambda inp=inp: call(inp)) for inp in inputs]
                kw = {"quick": quick} if budget_ms is None else {"quick": quick, "budget_ms": budget_ms}
                p20, p50, p80 = percentiles(timer(fns, **kw))
                row.update(p20_us=p20, p50_us=p50, p80_us=p80,
                           note="; ".join(x for x in (impl.note, l2_note) if x))
            except Skip as e:
                row["note"] = f"skipped: {e}"
            except Exception as e:  # compile errors, signature mismatches, capture failures: data
                row["note"] = "error: " + one_line(e)
            finally:
                _release(device)
        append_rows(out, [row])
        rows.append(row)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{case.name} {shape} {impl.name}"[:60])
        else:
            t = row["p50_us"]
            print(f"{case.name:7s} {shape:40s} {impl.name:20s} "
                  + (f"{t:10.1f} us" if not math.isnan(t) else row["note"][:80]), flush=True)
    del inputs
    _release(device)
    return rows


def _release(device: str) -> None:
    """Give cached blocks back between measurements, so a large shape's graphs do not starve the next."""
    if str(device).startswith("cuda"):
        try:
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()
        except Exception:
            pass
