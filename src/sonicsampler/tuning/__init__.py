"""Launch configurations kept as data (one JSON table per GPU architecture), with an explicit override."""
from .sample_config import SampleConfig, sample_config
from .topk_config import STRATEGIES, TopKConfig, topk_config

__all__ = ["STRATEGIES", "SampleConfig", "TopKConfig", "sample_config", "topk_config"]
