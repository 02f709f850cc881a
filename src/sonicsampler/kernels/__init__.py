"""@triton.jit code only: no allocation, no validation, no host decisions."""
import os

# Triton reads TRITON_INTERPRET when a function is decorated, i.e. when these modules are imported:
# remember the mode they were built in, so the launchers can refuse CPU tensors with a clear error.
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
