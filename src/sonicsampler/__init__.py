"""sonicsampler: LLM sampling in two fused Triton launches, exact and CUDA-graph safe."""
from .errors import InvalidParameterError, SamplingInputError
from .params import SamplingParams
from .topk import topk

__all__ = ["SamplingParams", "InvalidParameterError", "SamplingInputError", "topk"]
__version__ = "0.1.0"
