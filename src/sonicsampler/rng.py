"""Counter-based random numbers, bit for bit the same as the kernels' (`kernels/rng.py`).

Every uniform the library uses is a pure function of (seed, position, stream, token):

    words = Philox4x32-10(key = (seed & 0xffffffff, seed >> 32),
                          counter = (token >> 2, position & 0xffffffff, stream, position >> 32))
    x     = words[token & 3]
    u     = ((x >> 9) + 0.5) * 2**-23

Philox is Triton's own (`tl.philox`, the generator behind `tl.rand`), with the full 64-bit seed as its
key and the position split over two counter words, so positions past 2**32 stay distinct. One Philox
call yields four words; four consecutive tokens share a call, which makes noise for a whole vocabulary
four times cheaper than one call per token.

The conversion to a float is ours, not `tl.rand`'s: `tl.rand` can return exactly 0.0 and, after fp32
rounding, exactly 1.0, and `-log(-log(u))` turns the latter into +inf noise, which would make a token
win a Gumbel-max regardless of its probability (about once per 2**25 draws, i.e. once every few rows at
a 150k vocabulary). The 23-bit conversion above is exact in fp32 and lies in [2**-24, 1 - 2**-24].

This module is plain torch (int64 arithmetic, CPU or GPU) so that the reference implementation and the
tests can reproduce the kernels' noise exactly.
"""
from __future__ import annotations

import secrets

import torch

# Streams separate independent uses of one request's randomness at one position.
STREAM_SAMPLE = 0     # Gumbel noise of the sampled token
STREAM_ACCEPT = 1     # speculative acceptance test
STREAM_RESIDUAL = 2   # draw from the residual distribution after a rejection

_M32 = 0xFFFFFFFF
_ROUND_A = 0xD2511F53
_ROUND_B = 0xCD9E8D57
_KEY_A = 0x9E3779B9
_KEY_B = 0xBB67AE85
PHILOX_ROUNDS = 10


def draw_seed() -> int:
    """A fresh 64-bit seed for a request that did not give one."""
    return secrets.randbits(64)


def _mulhilo(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) 32-bit words of the 64-bit product of constant `a` and uint32 values `b` (in int64)."""
    t1 = a * (b & 0xFFFF)            # < 2**48
    t2 = a * (b >> 16)               # < 2**48
    s = ((t2 & 0xFFFF) << 16) + t1   # < 2**49
    return (t2 >> 16) + (s >> 32), s & _M32


def philox4x32(seed: int, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor,
               rounds: int = PHILOX_ROUNDS) -> tuple[torch.Tensor, ...]:
    """Philox4x32 exactly as `triton.language.philox` computes it; counters are int64 tensors of uint32 values."""
    seed &= (1 << 64) - 1
    k0, k1 = seed & _M32, seed >> 32
    c0, c1, c2, c3 = (c & _M32 for c in torch.broadcast_tensors(c0, c1, c2, c3))
    for _ in range(rounds):
        hi_b, lo_b = _mulhilo(_ROUND_B, c2)
        hi_a, lo_a = _mulhilo(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = (k0 + _KEY_A) & _M32
        k1 = (k1 + _KEY_B) & _M32
    return c0, c1, c2, c3


def random_words(seed: int, position: int, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """The raw uint32 word (as int64) behind each token's uniform."""
    tokens = tokens.to(torch.int64)
    position &= (1 << 64) - 1
    z = torch.zeros_like(tokens)
    words = philox4x32(seed, tokens >> 2, z + (position & _M32), z + stream, z + (position >> 32))
    lane = tokens & 3
    out = words[3]
    for j in (2, 1, 0):
        out = torch.where(lane == j, words[j], out)
    return out


def words_to_uniform(words: torch.Tensor) -> torch.Tensor:
    """uint32 words (int64) -> float32 uniforms in [2**-24, 1 - 2**-24], exactly as the kernels convert."""
    return (((words >> 9).to(torch.float64) + 0.5) * 2.0 ** -23).to(torch.float32)


def uniforms(seed: int, position: int, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """u(seed, position, stream, t) for each token t: float32, bit-identical to the kernels."""
    return words_to_uniform(random_words(seed, position, stream, tokens))


def gumbel(seed: int, position: int, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise -log(-log(u)) in float32 (the kernels may differ by float rounding of log)."""
    u = uniforms(seed, position, stream, tokens)
    return -torch.log(-torch.log(u))
