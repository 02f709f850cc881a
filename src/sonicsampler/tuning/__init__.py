"""Launch configurations kept as data (one JSON table per GPU architecture), with an explicit override."""
from .topk_config import TopKConfig, topk_config

__all__ = ["TopKConfig", "topk_config"]
