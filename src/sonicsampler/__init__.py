"""sonicsampler: LLM sampling in two fused Triton launches, exact and CUDA-graph safe."""
from .errors import InvalidParameterError, SamplingInputError
from .params import SamplingParams

__all__ = ["SamplingParams", "InvalidParameterError", "SamplingInputError"]
__version__ = "0.1.0"
