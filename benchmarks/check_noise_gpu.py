"""The kernels' Gumbel noise on the GPU (MUFU logarithms, kernels/rng.py) against -log(-log u) in float64,
for every uniform the contract can produce (2**23 values): the largest absolute error, which must stay
well inside the 1e-5 near-tie tolerance of the token comparisons. Prints one JSON line.

    python3 benchmarks/check_noise_gpu.py
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch
import triton
import triton.language as tl

from sonicsampler import rng
from sonicsampler.kernels.rng import noise_from_uniform


@triton.jit
def _noise_of(u_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, noise_from_uniform(tl.load(u_ptr + offs)))


def main():
    u = rng.words_to_uniform(torch.arange(2**23, dtype=torch.int64) << 9).cuda()   # one per 23-bit value
    out = torch.full_like(u, float("nan"))
    _noise_of[(u.numel() // 1024,)](u, out, BLOCK=1024)
    exact = -torch.log(-torch.log(u.double()))
    err = (out.double() - exact).abs()
    worst = int(err.argmax())
    print(json.dumps({"what": "noise", "gpu": torch.cuda.get_device_name(), "values": u.numel(),
                      "max_abs_err": float(err.max()), "at_u": float(u[worst]),
                      "mean_abs_err": float(err.mean()), "finite": bool(torch.isfinite(out).all()),
                      "ok": bool(err.max() < 1e-5)}))


if __name__ == "__main__":
    main()
