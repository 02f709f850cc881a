"""Launch-configuration lookup: measured table entries, nearest vocabulary bucket, explicit override."""
import dataclasses
import importlib

import torch

from sonicsampler.tuning import SampleConfig, TopKConfig, sample_config, topk_config

table_mod = importlib.import_module("sonicsampler.tuning.table")


def use_table(monkeypatch, entries):
    monkeypatch.setattr(table_mod, "arch", lambda device: "sm90")
    monkeypatch.setattr(table_mod, "entries", lambda kind, arch: entries)
    table_mod._nearest.cache_clear()   # lookups are cached per shape

TABLE = (
    {"max_vocab": 32768, "max_rows": 1, "block": 4096, "warps1": 8, "warps2": 8, "emit": 32},
    {"max_vocab": 32768, "max_rows": 128, "block": 2048, "warps1": 4, "warps2": 8, "emit": 32},
    {"max_vocab": 151936, "max_rows": 1, "block": 8192, "warps1": 8, "warps2": 8, "emit": 32},
    {"max_vocab": 151936, "max_rows": 128, "block": 16384, "warps1": 4, "warps2": 8, "emit": 32},
)


def test_table_lookup(monkeypatch):
    use_table(monkeypatch, TABLE)
    dev = torch.device("cpu")
    assert topk_config(dev, 151936, 1) == TopKConfig(8192, 0, 8, 8, 32)
    assert topk_config(dev, 151936, 2) == TopKConfig(16384, 0, 4, 8, 32)      # next row bound
    assert topk_config(dev, 151936, 500) == TopKConfig(16384, 0, 4, 8, 32)    # past the last: the last
    # nearest vocabulary; 8 tiles of 4096 would hold more than 32 of the top 128 too often (refill_risk)
    assert topk_config(dev, 30000, 1) == TopKConfig(4096, 0, 8, 8, 64)
    assert topk_config(dev, 128256, 64).block == 16384                         # nearest is 151936
    assert topk_config(dev, 40000, 100).block == 2048                          # 40000 is nearer 32768
    # a small vocabulary never gets fewer than 8 tiles from a large-vocabulary entry (if tiles allow)
    assert topk_config(dev, 70000, 1).block == 4096                            # nearer 32768 (log scale)
    assert topk_config(dev, 80000, 1).block == 8192                            # nearer 151936: 10 tiles
    use_table(monkeypatch, TABLE[2:])
    assert topk_config(dev, 20000, 1).block == 2048


def test_refill_risk_refuses_configurations_that_saturate_tiles(monkeypatch):
    """refill_risk is the expected share of rows whose stage 2 re-reads a tile (a Poisson tail): run 18
    timed block 4096 / emit 8 at V = 151936 at 10.7 us on one input and 18.9 on fresh ones, with about
    a third of the rows refilled. The lookup doubles such an entry's emit until the risk is <= 1e-3."""
    from sonicsampler.tuning.topk_config import MAX_REFILL_RISK, refill_risk
    assert 0.2 < refill_risk(151936, 4096, 8) < 0.5
    assert refill_risk(151936, 4096, 16) < 1e-5 < refill_risk(151936, 2048, 8) < 1e-2
    assert refill_risk(151936, 1024, 8) < MAX_REFILL_RISK
    assert refill_risk(151936, 1024, 8, k=8) < refill_risk(151936, 1024, 8)   # fewer winners, less risk
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 128, "block": 4096, "warps1": 4, "warps2": 8,
                             "emit": 8, "strategy": "extract"},))
    assert topk_config(torch.device("cpu"), 151936, 1).emit == 16


def test_no_table_uses_the_heuristic():
    table_mod._nearest.cache_clear()
    cfg = topk_config(torch.device("cpu"), 151936, 32)
    assert cfg.block & (cfg.block - 1) == 0 and 8 <= -(-151936 // cfg.block) <= 64


def test_sampler_table_is_extrapolated_only_from_a_large_batch(monkeypatch):
    """Past the table's rows the last entry applies if it was measured at >= 32 rows (run 26: 512
    verification rows on the fallback took 10x the time of 128 rows on the table's entry); a table
    of small batches only is not stretched to large ones."""
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 1, "block": 4096, "emit": 16, "warps1": 4, "warps2": 8},))
    dev = torch.device("cpu")
    assert sample_config(dev, 151936, 1) == SampleConfig(4096, 16, 4, 8)
    assert sample_config(dev, 151936, 2) == SampleConfig(topk_config(dev, 151936, 2).block, 32, 8, 8)
    table_mod._nearest.cache_clear()
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 1, "block": 4096, "emit": 16, "warps1": 8, "warps2": 8},
                            {"max_vocab": 151936, "max_rows": 128, "block": 1024, "emit": 8, "warps1": 1, "warps2": 8,
                             "strategy": "extract"}))
    assert sample_config(dev, 151936, 512) == SampleConfig(1024, 8, 1, 8, "extract")
    assert sample_config(dev, 151936, 100_000) == SampleConfig(1024, 8, 1, 8, "extract")
    # At a smaller vocabulary the same tile holds more of the top 128: emit doubles until refills are
    # rare (32 tiles of 1024 at V = 32768 hold 4 of them on average; more than 8 in half the rows).
    assert sample_config(dev, 32768, 128) == SampleConfig(1024, 16, 1, 8, "extract")
    table_mod._nearest.cache_clear()


def test_register_caps_reach_the_launches(monkeypatch):
    """A table entry's register caps (regs1/regs2) become the stages' maxnreg launch option; none
    when absent, and the Sampler's `regs` override wins. Run 38: stage 1 capped at 128 registers took
    91.2 us at 128 rows against 101.8 uncapped."""
    from sonicsampler import Sampler
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 128, "block": 1024, "emit": 8, "warps1": 1,
                             "warps2": 8, "strategy": "extract", "regs1": 128},))
    dev = torch.device("cpu")
    assert sample_config(dev, 151936, 64) == SampleConfig(1024, 8, 1, 8, "extract", 128, 0)
    plan = Sampler(151936, 4, "cpu")._plan(64, torch.bfloat16, False, 0, False)
    assert plan["const1"]["maxnreg"] == 128 and "maxnreg" not in plan["const2"]
    plan = Sampler(151936, 4, "cpu", regs=(0, 96))._plan(64, torch.bfloat16, False, 0, False)
    assert "maxnreg" not in plan["const1"] and plan["const2"]["maxnreg"] == 96
    table_mod._nearest.cache_clear()


def test_penalised_batches_take_their_own_stage1_register_cap(monkeypatch):
    """A table entry's regs1_penalised caps stage 1 for batches with a grammar mask or a row with
    penalties or bias, and only for those (run 78: the heavy mix at 32 rows 52.6 us under 128
    registers, 47.9 under 160; the standard mix prefers 128)."""
    from sonicsampler import Sampler, SamplingParams
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 32, "block": 1024, "emit": 8, "warps1": 1,
                             "warps2": 8, "strategy": "extract", "regs1": 128, "regs1_penalised": 160},))
    s = Sampler(151936, 4, "cpu")
    s.add_request(0, SamplingParams(temperature=0.7, top_k=50))
    s.add_request(1, SamplingParams(temperature=0.7, repetition_penalty=1.1))
    s.add_request(2, SamplingParams(temperature=0.7, logit_bias={3: 1.0}))
    assert [s._batch_summary(rows, mask)[2] for rows, mask in (([0], False), ([0, 1], False), ([2], False),
                                                               ([0], True))] == [False, True, True, True]
    assert s._batch_summary(None, False)[2]          # device slots: every admitted request counts
    caps = {p: s._plan(16, torch.bfloat16, False, 0, False, penalised=p)["const1"]["maxnreg"] for p in (False, True)}
    assert caps == {False: 128, True: 160}
    assert Sampler(151936, 4, "cpu", regs=(96, 0)).launch_config(16, True).regs1 == 96   # the override wins
    # warmup prepares both caps even before any penalised request is admitted (one compiled pair each).
    plain = Sampler(151936, 4, "cpu")
    plain.add_request(0, SamplingParams(temperature=0.7, top_k=50))
    # Each cap without and with the shared passes: up to 16 rows (long_chunks) the shared variant has
    # helpers and 128 chunks a pass, with wide passes (on a GPU, 64 chunks from 2 rows: Sampler._chunks,
    # one more shared variant per cap there), from 17 rows on neither (a third variant per cap).
    assert plain.warmup(16) == 4
    assert {p["const1"]["maxnreg"] for p in plain._plans.values()} == {128, 160}
    assert plain.warmup(17) == 6
    table_mod._nearest.cache_clear()


def test_a_gpu_without_a_measured_table_is_told():
    """An architecture with no measured table takes the default configuration, with a warning once per
    kind (not silently): the user learns that the launches are untuned and which script measures them."""
    import warnings

    import pytest
    table_mod.entries.cache_clear()
    with pytest.warns(RuntimeWarning, match="no measured sample launch table for sm_test.*tune_sampler"):
        assert table_mod.entries("sample", "sm_test") == ()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table_mod.entries("sample", "sm_test")       # once: the lookup is cached
        assert table_mod.entries("sample", "sm90")   # a measured table loads without a word
    assert not seen
    table_mod.entries.cache_clear()


def test_shipped_sample_table_keeps_stage_two_in_one_wave_up_to_256_rows(monkeypatch):
    """The H100's sample table (tables/sample_sm90.json): stage 2 holds a whole SM per row at 255
    registers, so 129-256 rows take the 256-row point, capped at 128 registers (two programs per SM:
    one wave; runs 147-148), and larger batches go back to 255, which won at 512 rows."""
    monkeypatch.setattr(table_mod, "arch", lambda device: "sm90")
    table_mod._nearest.cache_clear()
    dev = torch.device("cpu")
    caps = {n: sample_config(dev, 151936, n).regs2 for n in (1, 32, 128, 129, 256, 257, 512, 1024)}
    assert caps == {1: 0, 32: 255, 128: 255, 129: 128, 256: 128, 257: 255, 512: 255, 1024: 255}
    # the same launch otherwise
    assert dataclasses.replace(sample_config(dev, 151936, 256), regs2=255) == sample_config(dev, 151936, 128)
    # stage 1 capped at 96 registers from 33 rows up (runs 150-150b), penalised batches at 128 as before
    assert [sample_config(dev, 151936, n).stage1_regs(False) for n in (32, 33, 128, 512)] == [128, 96, 96, 96]
    assert [sample_config(dev, 151936, n).stage1_regs(True) for n in (32, 128, 512)] == [160, 128, 128]
    # verification's stage 1 (more live values: the pending drafts' counts) keeps 128 (run 151)
    assert [sample_config(dev, 151936, n).stage1_regs(False, verify=True) for n in (32, 128, 256, 512)] \
        == [128, 128, 128, 128]
    assert sample_config(dev, 151936, 128).stage1_regs(True, verify=True) == 128
    table_mod._nearest.cache_clear()


def test_an_entry_may_allow_more_refill_risk(monkeypatch):
    """A sample entry's max_refill_risk replaces the lookup's 1e-3 for that entry only: 512-token tiles
    emitting 8 at V = 32768 re-read a tile in ~1.5% of rows, a cost counted in run 249's times on fresh
    inputs, so the entry keeps emit 8 there; smaller vocabularies, where the risk passes its bound, still
    double emit, and an entry without the field still refuses the risk."""
    from sonicsampler.tuning.topk_config import refill_risk
    assert 0.01 < refill_risk(32768, 512, 8) < 0.02 < refill_risk(16384, 512, 8)
    entry = {"max_vocab": 32768, "max_rows": 128, "block": 512, "warps1": 1, "warps2": 8, "emit": 8,
             "strategy": "extract"}
    dev = torch.device("cpu")
    use_table(monkeypatch, (entry,))
    assert sample_config(dev, 32768, 1).emit == 16
    use_table(monkeypatch, (dict(entry, max_refill_risk=0.02),))
    assert (sample_config(dev, 32768, 1).emit, sample_config(dev, 32000, 1).emit) == (8, 8)
    assert sample_config(dev, 16384, 1).emit == 16
    table_mod._nearest.cache_clear()


def test_shipped_sample_table_at_32768(monkeypatch):
    """The H100's V = 32768 points (run 249): 512-token tiles emitting 8 with one warp at every batch size
    (the V = 151936 entries fitted to 32768 took 23.9 µs at 1 row: 8 tiles of 4096 emitting 64), at 2-32
    rows the stage-1 caps of V = 151936's 32-row entry, at 33-128 the 128-row entry's (under which run 249
    timed 64 and 128 rows), run 147's stage-2 cap at 129-256 rows; V = 151936's lookups are unchanged."""
    monkeypatch.setattr(table_mod, "arch", lambda device: "sm90")
    table_mod._nearest.cache_clear()
    dev = torch.device("cpu")
    for v in (32000, 32768, 50257):
        cfgs = [sample_config(dev, v, n) for n in (1, 4, 64, 128, 256, 512)]
        assert {(c.block, c.emit, c.warps1, c.warps2, c.strategy) for c in cfgs} == {(512, 8, 1, 8, "extract")}
        assert [c.regs2 for c in cfgs] == [0, 255, 255, 255, 128, 255]
        # 2-32 rows keep the stage-1 caps they had from V = 151936's 32-row entry (runs 70, 78)
        assert [c.stage1_regs(False) for c in cfgs] == [0, 128, 96, 96, 96, 96]
        assert [c.stage1_regs(True) for c in cfgs[1:]] == [160, 128, 128, 128, 128]
        assert [c.stage1_regs(False, verify=True) for c in cfgs[1:]] == [128] * 5
    assert (sample_config(dev, 151936, 1).block, sample_config(dev, 151936, 1).strategy) == (4096, "rank")
    assert sample_config(dev, 151936, 64).block == 1024
    table_mod._nearest.cache_clear()


def test_verification_plans_take_the_verify_cap(monkeypatch):
    """Sampler.verify plans its launches with verify=True, so that its stage 1 takes the table's
    regs1_verify; Sampler.sample does not. With the sm90 table, the two plans' stage-1 caps differ at 128
    rows (96 for the sampler, 128 for verification: run 151)."""
    from sonicsampler import Sampler, SamplingParams
    seen = []
    real = Sampler._plan

    def spy(self, *a, **kw):
        seen.append(kw.get("verify", False))
        return real(self, *a, **kw)

    monkeypatch.setattr(Sampler, "_plan", spy)
    v = 64
    s = Sampler(v, 1, "cpu", bound=8, block=32)
    s.add_request(0, SamplingParams(temperature=0.7, top_k=4, seed=1))
    logits = torch.randn(2, v).to(torch.bfloat16)
    s.verify(logits, torch.tensor([[3]]), [0], [0])
    s.sample(logits[:1], [0], [1])
    assert seen == [True, False]
    monkeypatch.setattr(Sampler, "_plan", real)
    use_table(monkeypatch, table_mod.entries.__wrapped__("sample", "sm90"))
    t = Sampler(151936, 128, "cpu")
    caps = [t._plan(128, torch.bfloat16, False, 0, False, verify=verify)["const1"].get("maxnreg")
            for verify in (False, True)]
    assert caps == [96, 128]
    table_mod._nearest.cache_clear()
