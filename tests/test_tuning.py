"""Launch-configuration lookup: measured table entries, nearest vocabulary bucket, explicit override."""
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
    assert topk_config(dev, 30000, 1) == TopKConfig(4096, 0, 8, 8, 32)        # nearest vocabulary
    assert topk_config(dev, 128256, 64).block == 16384                         # nearest is 151936
    assert topk_config(dev, 40000, 100).block == 2048                          # 40000 is nearer 32768
    # a small vocabulary never gets fewer than 8 tiles from a large-vocabulary entry (if tiles allow)
    assert topk_config(dev, 70000, 1).block == 4096                            # nearer 32768 (log scale)
    assert topk_config(dev, 80000, 1).block == 8192                            # nearer 151936: 10 tiles
    use_table(monkeypatch, TABLE[2:])
    assert topk_config(dev, 20000, 1).block == 2048


def test_no_table_uses_the_heuristic():
    table_mod._nearest.cache_clear()
    cfg = topk_config(torch.device("cpu"), 151936, 32)
    assert cfg.block & (cfg.block - 1) == 0 and 8 <= -(-151936 // cfg.block) <= 64


def test_sampler_table_is_not_extrapolated_past_its_rows(monkeypatch):
    use_table(monkeypatch, ({"max_vocab": 151936, "max_rows": 1, "block": 4096, "emit": 16, "warps1": 4, "warps2": 8},))
    dev = torch.device("cpu")
    assert sample_config(dev, 151936, 1) == SampleConfig(4096, 16, 4, 8)
    assert sample_config(dev, 151936, 2) == SampleConfig(topk_config(dev, 151936, 2).block, 32, 8, 8)
    table_mod._nearest.cache_clear()
