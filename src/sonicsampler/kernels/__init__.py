"""@triton.jit code only: no allocation, no validation, no host decisions."""
