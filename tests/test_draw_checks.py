"""The statistical tests' distribution check (draw_checks) can fail: exact tails against direct sums,
a 0.1 shift of probability mass over 800 draws fails it, a token of probability 0 drawn or an id past the
vocabulary fails it, and
the rare-token count that a z-test misjudged (13 draws expected 3 times) passes."""
import math

import pytest
import torch

from draw_checks import ALPHA, assert_draws_follow, binomial_two_sided


@pytest.mark.parametrize("n,p,k", [(800, 0.00371, 13), (800, 0.2, 100), (800, 0.2, 160), (30, 0.5, 3), (5, 0.9, 5),
                                   (200, 0.01, 0)])
def test_tails_equal_direct_sums(n, p, k):
    lower = sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k + 1))
    upper = sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))
    assert binomial_two_sided(k, n, p) == pytest.approx(min(1.0, 2 * min(lower, upper)), rel=1e-9)


def _draws(target, counts):
    return torch.cat([torch.full((c,), t) for t, c in enumerate(counts)])


def test_exact_counts_pass_and_a_shift_of_mass_fails():
    target = torch.tensor([0.4, 0.3, 0.2, 0.1, 0.0])
    assert_draws_follow(_draws(target, [320, 240, 160, 80, 0]), target)
    with pytest.raises(AssertionError, match="binomial tail"):
        assert_draws_follow(_draws(target, [400, 240, 80, 80, 0]), target)   # 0.1 moved from token 2 to 0


def test_a_token_of_probability_zero_drawn_fails():
    target = torch.tensor([0.5, 0.5, 0.0])
    with pytest.raises(AssertionError, match="probability 0"):
        assert_draws_follow(_draws(target, [400, 399, 1]), target)


def test_an_id_outside_the_vocabulary_fails():
    target = torch.tensor([0.5, 0.5])
    with pytest.raises(AssertionError, match="outside the vocabulary"):
        assert_draws_follow(torch.tensor([0, 1, 1, 2]), target)


def test_a_rare_token_drawn_a_few_times_more_passes():
    target = torch.tensor([0.00371, 1 - 0.00371])
    assert binomial_two_sided(13, 800, 0.00371) > ALPHA
    assert_draws_follow(_draws(target, [13, 787]), target)
