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

Seeds and positions are uint64 values. Every function takes them either as Python ints (taken modulo
2**64; negative ints are their two's-complement pattern) or as int64 tensors holding the uint64 bit
pattern (as a kernel reads them; `as_int64` converts), broadcast against the token tensor. With tensors,
one call draws the noise of many (seed, position, token) triples at once -- e.g. every (row, token) pair
of a batch -- and each element equals the scalar call's value bit for bit.
"""
from __future__ import annotations

import secrets
from typing import Iterable, Union

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
_U64 = 1 << 64

# A uint64 value: a Python int (taken modulo 2**64) or an int64 tensor holding the uint64 bit pattern.
U64 = Union[int, torch.Tensor]


def draw_seed() -> int:
    """A fresh 64-bit seed for a request that did not give one."""
    return secrets.randbits(64)


def as_int64(values: Iterable[int], device=None) -> torch.Tensor:
    """uint64 values (Python ints, taken modulo 2**64) -> an int64 tensor holding their bit patterns."""
    return torch.tensor([((int(v) + (1 << 63)) % _U64) - (1 << 63) for v in values], dtype=torch.int64,
                        device=device)


def _split64(value: U64) -> tuple:
    """(low, high) 32-bit words of a uint64 value, as ints or as int64 tensors of uint32 values."""
    if torch.is_tensor(value):
        if value.dtype != torch.int64:
            raise TypeError(f"seeds and positions given as tensors must be int64 (the uint64 bit pattern), "
                            f"got {value.dtype}")
        # `& _M32` after the arithmetic shift drops the sign extension of patterns >= 2**63
        return value & _M32, (value >> 32) & _M32
    value = int(value) % _U64
    return value & _M32, value >> 32


def _mulhilo(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) 32-bit words of the 64-bit product of constant `a` and uint32 values `b` (in int64)."""
    t1 = a * (b & 0xFFFF)            # < 2**48
    t2 = a * (b >> 16)               # < 2**48
    s = ((t2 & 0xFFFF) << 16) + t1   # < 2**49
    return (t2 >> 16) + (s >> 32), s & _M32


def philox4x32(seed: U64, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor,
               rounds: int = PHILOX_ROUNDS) -> tuple[torch.Tensor, ...]:
    """Philox4x32 exactly as `triton.language.philox` computes it; counters are int64 tensors of uint32 values.

    `seed` (the 64-bit key) is an int or an int64 tensor of per-element keys, broadcast with the counters.
    """
    k0, k1 = _split64(seed)
    if torch.is_tensor(k0):
        c0, c1, c2, c3, k0, k1 = torch.broadcast_tensors(c0, c1, c2, c3, k0, k1)
    else:
        c0, c1, c2, c3 = torch.broadcast_tensors(c0, c1, c2, c3)
    c0, c1, c2, c3 = (c & _M32 for c in (c0, c1, c2, c3))
    for _ in range(rounds):
        hi_b, lo_b = _mulhilo(_ROUND_B, c2)
        hi_a, lo_a = _mulhilo(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = (k0 + _KEY_A) & _M32
        k1 = (k1 + _KEY_B) & _M32
    return c0, c1, c2, c3


def random_words(seed: U64, position: U64, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """The raw uint32 word (as int64) behind each token's uniform.

    `seed` and `position` are ints or int64 tensors broadcast against `tokens` (per-element values).
    """
    tokens = tokens.to(torch.int64)
    p_lo, p_hi = _split64(position)
    z = torch.zeros_like(tokens)
    words = philox4x32(seed, tokens >> 2, z + p_lo, z + stream, z + p_hi)
    lane = tokens & 3
    out = words[3]
    for j in (2, 1, 0):
        out = torch.where(lane == j, words[j], out)
    return out


def words_to_uniform(words: torch.Tensor) -> torch.Tensor:
    """uint32 words (int64) -> float32 uniforms in [2**-24, 1 - 2**-24], exactly as the kernels convert."""
    return (((words >> 9).to(torch.float64) + 0.5) * 2.0 ** -23).to(torch.float32)


def uniforms(seed: U64, position: U64, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """u(seed, position, stream, t) for each token t: float32, bit-identical to the kernels.

    `seed` and `position`: ints, or int64 tensors of per-element values broadcast against `tokens`.
    """
    return words_to_uniform(random_words(seed, position, stream, tokens))


def gumbel(seed: U64, position: U64, stream: int, tokens: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise -log(-log(u)) in float32 (the kernels may differ by float rounding of log).

    `seed` and `position`: ints, or int64 tensors of per-element values broadcast against `tokens`.
    """
    u = uniforms(seed, position, stream, tokens)
    return -torch.log(-torch.log(u))
