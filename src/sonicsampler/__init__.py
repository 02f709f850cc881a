"""sonicsampler: LLM sampling in two fused Triton launches, exact and CUDA-graph safe."""
from .errors import InvalidParameterError, SamplingInputError
from .outputs import SampleOutput, SparseDraftProbs, VerifyOutput
from .params import SamplingParams
from .sampler import Sampler, sample
from .topk import topk

__all__ = ["SamplingParams", "Sampler", "sample", "topk", "SampleOutput", "SparseDraftProbs", "VerifyOutput",
           "InvalidParameterError", "SamplingInputError"]
__version__ = "0.1.0"
