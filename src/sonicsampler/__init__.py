"""sonicsampler: LLM sampling in two fused Triton launches, exact and CUDA-graph safe."""
from .errors import InvalidParameterError, SamplingInputError
from .outputs import SampleOutput, SparseDraftProbs, VerifyOutput
from .params import SamplingParams
from .sampler import Sampler, sample
from .topk import topk, topk_warmup

__all__ = ["SamplingParams", "Sampler", "sample", "topk", "topk_warmup", "SampleOutput", "SparseDraftProbs",
           "VerifyOutput", "InvalidParameterError", "SamplingInputError"]
__version__ = "0.1.0"
