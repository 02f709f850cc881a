"""dtype -> (rtol, atol) for comparing values; indices and selected sets are always compared exactly."""
import torch

TOLERANCE = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-5),      # log-probabilities summed in a different order than the reference
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (8e-3, 8e-3),
}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype = torch.float32):
    rtol, atol = TOLERANCE[dtype]
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill an output buffer with a value no correct kernel writes there."""
    if t.dtype.is_floating_point:
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        return t.fill_(True)
    return t.fill_(-12345)
