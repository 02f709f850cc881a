"""Test conventions.

- With no GPU, kernels run under Triton's interpreter: TRITON_INTERPRET must be set before any
  `@triton.jit` function is decorated, i.e. before sonicsampler's kernel modules are imported.
- Kernel tests carry the `interpreter` marker and use small tiles; outputs are poisoned before each
  launch (`poison`), so an element the kernel forgot to write fails the comparison.
- Value comparisons use the dtype -> tolerance table in `tolerances.py`; indices and selected sets are
  compared exactly.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    # The interpreter's own costs (triton.language re-patched on every helper call, frame-stack chunks
    # mapped and unmapped per tile operation) took half of CI's time: sonicsampler/interpreter_speedup.py;
    # tests/test_interpreter_speedup.py checks it changes no result.
    from sonicsampler import interpreter_speedup  # noqa: E402
    interpreter_speedup.install()

import pytest  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def device():
    return DEVICE


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_gpu)
