"""The distribution check of the kernels' statistical tests (test_sampler, test_verify): n draws of a
token against the expected probabilities, token by token, with exact binomial tails.

A normal z-score misjudges tokens with few expected draws: under the interpreter (a few hundred draws)
a token of probability 0.0037 expects 3 draws, and 13, which happens with probability 1.3e-5, is
|z| = 5.8. So each token's count k is tested against Binomial(n, p) exactly: the two-sided tail
probability 2 min(P(X <= k), P(X >= k)) must be at least ALPHA = 1e-7 (a normal |z| of 5.3 where the
approximation holds). Over 64 tokens a false alarm has probability below 1e-5; Philox is deterministic,
so a test either always passes or always fails for its seeds. Tokens of probability 0 must not be
drawn at all."""
from __future__ import annotations

import math

import torch

ALPHA = 1e-7


def _log_pmf(j: int, n: int, p: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
            + j * math.log(p) + (n - j) * math.log1p(-p))


def _tail(k: int, n: int, p: float, step: int) -> float:
    """Sum of the pmf from k away from the mode (step +1: k..n, -1: k..0), stopped once terms are
    negligible (they fall geometrically there)."""
    total, j = 0.0, k
    while 0 <= j <= n:
        term = math.exp(_log_pmf(j, n, p))
        total += term
        if term < 1e-30 * max(total, 1e-300) or (term == 0.0 and total > 0.0):
            break
        j += step
    return total


def binomial_two_sided(k: int, n: int, p: float) -> float:
    """2 min(P(X <= k), P(X >= k)) for X ~ Binomial(n, p), capped at 1."""
    if p <= 0.0:
        return 1.0 if k == 0 else 0.0
    if p >= 1.0:
        return 1.0 if k == n else 0.0
    mode = math.floor((n + 1) * p)
    at_k = math.exp(_log_pmf(k, n, p))
    if k >= mode:
        upper = _tail(k, n, p, +1)
        lower = 1.0 - upper + at_k
    else:
        lower = _tail(k, n, p, -1)
        upper = 1.0 - lower + at_k
    return min(1.0, 2.0 * min(lower, upper))


def assert_draws_follow(tokens: torch.Tensor, target: torch.Tensor) -> None:
    """tokens: the n drawn ids; target: the expected probability of every id (length V)."""
    n = int(tokens.numel())
    ids = tokens.reshape(-1).cpu()
    assert int(ids.min()) >= 0 and int(ids.max()) < target.numel(), \
        f"drawn ids outside the vocabulary 0..{target.numel() - 1}: {ids.min()}..{ids.max()}"
    counts = torch.bincount(ids, minlength=target.numel()).tolist()
    probs = target.double().cpu().tolist()
    drawn_outside = [t for t, (c, p) in enumerate(zip(counts, probs)) if p == 0.0 and c > 0]
    assert not drawn_outside, f"tokens of probability 0 drawn: {drawn_outside}"
    tails = [(binomial_two_sided(c, n, p), t, c, p) for t, (c, p) in enumerate(zip(counts, probs)) if p > 0.0]
    worst = min(tails)
    assert worst[0] >= ALPHA, (f"token {worst[1]}: {worst[2]} of {n} draws against probability {worst[3]:.6g} "
                               f"(expected {n * worst[3]:.1f}); two-sided binomial tail {worst[0]:.3g} < {ALPHA}")
