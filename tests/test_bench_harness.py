"""CPU tests of the benchmark harness's plain-Python parts and of the PyTorch baseline pipelines.

The CUDA-graph timer needs a GPU; here a fake timer stands in, so the runner's bookkeeping (rows,
failures as data, the ratio table) is what is checked.
"""
import csv
import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import baselines, cases, harness  # noqa: E402
from benchmarks.harness import Case, Skip  # noqa: E402

ENV = {"gpu": "fake", "torch": "t", "triton": "tr", "git_commit": "abc", "date": "2026-01-01T00:00:00Z"}


@pytest.fixture
def fake_case():
    """A case named 'fake' with three implementations: one fine, one failing, one skipped."""
    harness.register_case(Case("fake", lambda cfg, dev, seed: {"x": torch.zeros(cfg["rows"], cfg["V"])},
                               grid={"rows": [1, 2], "V": [8]}, quick_grid={"rows": [1], "V": [8]},
                               baseline="good"))
    harness.register("fake", "good", lambda cfg: (lambda inp: inp["x"].sum()), note="fine")
    harness.register("fake", "half", lambda cfg: (lambda inp: inp["x"].sum()))

    def broken(cfg):
        raise RuntimeError("Inductor exploded\nwith a long\ttrace")
    harness.register("fake", "broken", broken)

    def absent(cfg):
        raise Skip("flashinfer not importable")
    harness.register("fake", "absent", absent)
    yield "fake"
    harness.CASES.pop("fake")
    harness.IMPLS.pop("fake")


def fake_timer(fns, quick=False, budget_ms=None):
    # Calls each function once (so a broken call would surface) and reports fixed times.
    for f in fns:
        f()
    return [10.0, 20.0, 30.0, 40.0, 50.0]


def test_registry_order_and_replacement(fake_case):
    assert list(harness.implementations("fake")) == ["good", "half", "broken", "absent"]
    harness.register("fake", "good", lambda cfg: None, note="replaced")
    impls = harness.implementations("fake")
    assert list(impls) == ["good", "half", "broken", "absent"]
    assert impls["good"].note == "replaced"


def test_baselines_registered_for_every_case():
    for case in ("topk", "sample", "verify"):
        assert case in harness.CASES
        assert harness.CASES[case].baseline in harness.implementations(case)
    assert "flashinfer.top_k" in harness.implementations("topk")


def test_expand_overrides_and_shape_strings():
    cfgs = harness.expand({"rows": [1, 4], "V": [10, 20], "k": 128}, {"rows": [32], "V": None, "gamma": [3]})
    assert cfgs == [{"rows": 32, "V": 10, "k": 128}, {"rows": 32, "V": 20, "k": 128}]
    s = harness.shape_str({"rows": 32, "V": 151936, "k": 128, "p": 0.9})
    assert s == "rows=32,V=151936,k=128,p=0.9"
    assert harness.parse_shape(s) == {"rows": 32, "V": 151936, "k": 128, "p": 0.9}


def test_default_grids_match_the_brief():
    topk = harness.expand(harness.CASES["topk"].grid)
    assert len(topk) == 6 * 4 and harness.shape_str(topk[0]) == "rows=1,V=32768,k=128"
    verify = harness.expand(harness.CASES["verify"].grid)
    assert len(verify) == 6 * 4 * 3
    assert harness.CASES["verify"].row_key == "B"


def test_percentiles_match_numpy():
    np = pytest.importorskip("numpy")
    xs = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    assert harness.percentiles(xs) == pytest.approx(list(np.percentile(xs, [20, 50, 80])))
    assert all(math.isnan(v) for v in harness.percentiles([]))


def test_plan_copies():
    l2 = 50 * 2**20
    assert harness.plan_copies(1 << 30, l2, 64) == (1, "")
    copies, note = harness.plan_copies(60 * 2**20, l2, 64)
    assert copies == 4 and note.startswith("rotating")
    copies, note = harness.plan_copies(64 * 1024, l2, 64)
    assert copies == 64 and note.startswith("L2 warm")


def test_append_rows_writes_header_once_and_nan(tmp_path):
    out = tmp_path / "sub" / "results.csv"
    row = {"case": "c", "shape": "rows=1", "impl": "i", "p20_us": 1.0, "p50_us": 2.0, "p80_us": 3.0, **ENV,
           "note": ""}
    harness.append_rows(out, [row])
    harness.append_rows(out, [{**row, "p20_us": math.nan, "p50_us": math.nan, "p80_us": math.nan,
                               "note": "error: x, y"}])
    lines = out.read_text().splitlines()
    assert lines[0].split(",") == harness.FIELDS
    assert len(lines) == 3
    back = harness.read_rows(out)
    assert back[0]["p50_us"] == 2.0 and math.isnan(back[1]["p50_us"])
    assert back[1]["note"] == "error: x, y"  # a comma in a note survives the round trip


def test_ratio_table_on_synthetic_numbers():
    def r(shape, impl, t, note=""):
        return {"case": "topk", "shape": shape, "impl": impl, "p50_us": t, "note": note}
    rows = [r("rows=1", "torch.topk", 100.0), r("rows=1", "ours", 25.0), r("rows=1", "fi", math.nan,
            "skipped: flashinfer not importable"),
            r("rows=2", "torch.topk", 90.0), r("rows=2", "ours", math.nan, "error: boom"), r("rows=2", "fi", 45.0)]
    text = harness.ratio_table(rows, {"topk": "torch.topk"})
    lines = text.strip().splitlines()
    assert "time(torch.topk)" in lines[0]
    row1 = lines[2].split()
    assert row1 == ["rows=1", "100.0", "4.00x", "skip"]
    assert lines[3].split() == ["rows=2", "90.0", "fail", "2.00x"]
    # Without a measured baseline the table falls back to p50s instead of failing.
    assert "not measured" in harness.ratio_table(rows, {"topk": "nobody"})


def test_run_records_failures_without_aborting(fake_case, tmp_path, capsys):
    out = tmp_path / "results.csv"
    rows = harness.run(cases=["fake"], out=out, device="cpu", timer=fake_timer, env=ENV, max_copies=2)
    assert len(rows) == 2 * 4  # two shapes x four implementations, the failing ones included
    back = {(r["shape"], r["impl"]): r for r in harness.read_rows(out)}
    good = back[("rows=1,V=8", "good")]
    assert good["p50_us"] == 30.0 and good["p20_us"] == 18.0 and good["gpu"] == "fake"
    assert good["note"].startswith("fine")
    broken = back[("rows=2,V=8", "broken")]
    assert math.isnan(broken["p50_us"])
    assert broken["note"] == "error: RuntimeError: Inductor exploded with a long trace"
    assert back[("rows=1,V=8", "absent")]["note"] == "skipped: flashinfer not importable"
    printed = capsys.readouterr().out
    assert "speedup = time(good)" in printed and "1.00x" in printed


def test_run_rejects_unknown_case(tmp_path):
    with pytest.raises(ValueError):
        harness.run(cases=["nope"], out=tmp_path / "r.csv", device="cpu", timer=fake_timer, env=ENV)


def test_failing_input_maker_becomes_rows(tmp_path):
    def bad_inputs(cfg, dev, seed):
        raise MemoryError("CUDA out of memory")
    harness.register_case(Case("oom", bad_inputs, grid={"rows": [1]}, quick_grid={"rows": [1]}, baseline="a"))
    harness.register("oom", "a", lambda cfg: (lambda inp: None))
    try:
        rows = harness.run(cases=["oom"], out=tmp_path / "r.csv", device="cpu", timer=fake_timer, env=ENV)
    finally:
        harness.CASES.pop("oom")
        harness.IMPLS.pop("oom")
    assert rows[0]["note"].startswith("inputs failed: MemoryError")


def test_merge_appends(tmp_path):
    src, dst = tmp_path / "a.csv", tmp_path / "b.csv"
    row = {"case": "c", "shape": "rows=1", "impl": "i", "p20_us": 1.0, "p50_us": 2.0, "p80_us": 3.0, **ENV}
    harness.append_rows(src, [row, row])
    harness.append_rows(dst, [row])
    assert harness.merge(src, dst) == 2
    with dst.open() as fh:
        assert len(list(csv.DictReader(fh))) == 3


def test_flashinfer_absent_is_a_skip(monkeypatch):
    monkeypatch.setattr(baselines, "_FI", ImportError("No module named 'flashinfer'"))
    with pytest.raises(Skip, match="flashinfer not importable"):
        baselines.f_flashinfer_topk({"k": 128})


def test_needs_reports_the_real_signature():
    def draw(probs, top_k, seed=None):
        return probs
    assert baselines.needs(draw, "seed") is draw
    with pytest.raises(TypeError, match=r"\['offset'\]"):
        baselines.needs(draw, "seed", "offset")


# ---------------------------------------------------------------- baseline pipelines on the CPU

def test_mask_keeps_top_k_then_nucleus():
    x = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])
    kept = baselines.mask_top_k_top_p(x.clone(), torch.tensor([3]), torch.tensor([1.0]))
    assert torch.isfinite(kept).tolist() == [[True, True, True, False, False, False]]
    kept = baselines.mask_top_k_top_p(x.clone(), torch.tensor([6]), torch.tensor([0.5]))
    assert torch.isfinite(kept).tolist() == [[True, False, False, False, False, False]]  # p(top) = 0.64


def test_torch_sample_stays_inside_top_k():
    torch.manual_seed(0)
    cfg = {"rows": 8, "V": 1000, "T": 0.7, "k": 5, "p": 1.0}
    inp = cases.sample_inputs(cfg, "cpu", 0)
    tok = baselines.torch_sample(inp["logits"], inp["temperature"], inp["top_k"], inp["top_p"])
    top = torch.topk(inp["logits"].float(), 5).indices
    assert tok.shape == (8,)
    assert (top == tok.unsqueeze(1)).any(dim=1).all()


def test_torch_verify_accepts_a_draft_equal_to_the_target():
    torch.manual_seed(0)
    cfg = {"B": 3, "gamma": 2, "V": 64, "T": 1.0, "k": 64, "p": 1.0}
    inp = cases.verify_inputs(cfg, "cpu", 0)
    target = torch.softmax(inp["target_logits"].float(), dim=-1)
    ids = target[:, :2].argmax(-1).to(torch.int32)
    out, n_acc = baselines.torch_verify(inp["target_logits"], target[:, :2].contiguous(), ids,
                                        inp["temperature_rows"], inp["top_k_rows"], inp["top_p_rows"])
    assert n_acc.tolist() == [2, 2, 2]
    assert out[:, :2].tolist() == ids.tolist() and (out[:, 2] >= 0).all()


def test_torch_verify_stops_at_the_first_rejection():
    cfg = {"B": 2, "gamma": 3, "V": 64, "T": 1.0, "k": 4, "p": 1.0}
    inp = cases.verify_inputs(cfg, "cpu", 1)
    x = inp["target_logits"].float().view(-1, 64)
    target = baselines.mask_top_k_top_p(x, inp["top_k_rows"], inp["top_p_rows"]).softmax(-1).view(2, 4, 64)
    # Drafts 1 and 2 equal the target (always accepted); draft 0 is sure of a token outside the
    # target's top-4 (p = 0, q = 1: always rejected), so the chain must stop at 0 all the same.
    draft = target[:, :3].clone()
    worst = inp["target_logits"][:, 0].float().argmin(-1)
    draft[:, 0] = torch.nn.functional.one_hot(worst, 64).float()
    ids = draft.argmax(-1).to(torch.int32)
    out, n_acc = baselines.torch_verify(inp["target_logits"], draft, ids,
                                        inp["temperature_rows"], inp["top_k_rows"], inp["top_p_rows"])
    assert n_acc.tolist() == [0, 0]
    assert (out[:, 1:] == -1).all()
    top4 = torch.topk(inp["target_logits"][:, 0].float(), 4).indices
    assert (top4 == out[:, :1]).any(dim=1).all()  # the replacement comes from the target's support


# ---------------------------------------------------------------- plotting helpers

def test_plot_series_and_latest(tmp_path):
    from benchmarks import plot

    rows = [{"case": "verify", "shape": f"B={b},gamma={g},V={v},T=0.7", "impl": "torch", "gpu": "H100",
             "date": d, "p20_us": 1.0, "p50_us": t, "p80_us": 3.0}
            for b in (1, 4) for g in (1, 3) for v in (10, 20) for d, t in (("2026-01-01", 9.0), ("2026-02-01", 2.0))]
    rows = plot.latest(rows)
    assert len(rows) == 8 and {r["p50_us"] for r in rows} == {2.0}
    data, xkey = plot.series(rows, "verify")
    assert xkey == "B"
    assert set(data) == {("gamma=1", 10), ("gamma=1", 20), ("gamma=3", 10), ("gamma=3", 20)}
    assert [p[0] for p in data[("gamma=1", 10)]["torch"]] == [1, 4]
    pytest.importorskip("matplotlib")
    csv_path = tmp_path / "r.csv"
    harness.append_rows(csv_path, rows)
    assert plot.main(["--csv", str(csv_path), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "verify.png").stat().st_size > 1000


def test_sampler_options_parse_integers_and_long_fill_as_a_bool():
    """The benchmarks' `--with` options (sampler_mix, trace_long_passes, profile_ncu): integers, long_fill
    a bool, which the Sampler requires (an int raises there)."""
    from benchmarks.sampler_mix import sampler_options
    from sonicsampler import Sampler
    opts = sampler_options("long_fill=0,long_chunks=32")
    assert opts == {"long_fill": False, "long_chunks": 32} and type(opts["long_fill"]) is bool
    assert sampler_options("") == {}
    s = Sampler(64, 2, "cpu", **opts)
    assert s.long_fill is False and s.long_chunks == 32
    with pytest.raises(ValueError, match="long_fill"):
        Sampler(64, 2, "cpu", long_fill=0)
