"""In-distribution properties of the reference (SEMANTICS.md sections 3 and 5).

* `reference.sample` draws from `reference.probs` (Gumbel-max with Philox noise is an exact draw).
* `reference.verify` emits sequences distributed exactly as sampling from the target alone
  (Leviathan et al.), for dense, sparse and one-hot drafts, targets truncated below the draft's
  support, penalties that make row 1 depend on the token emitted at row 0, and greedy targets.

How, within a few CPU-seconds per case. The reference processes rows in Python and spends ~0.6 ms per
Philox call, so 10**5 direct calls per case would take minutes. Each case therefore has two halves:

1. Direct: the reference itself runs on N_DIRECT draws (thousands), and every draw is compared token for
   token with a vectorized implementation of the contract's rule written here ("mirror": Gumbel-max
   argmax_t log p_t + g(seed, position, stream, t); acceptance u * q(d) <= p(d) with u from stream 1;
   residual Gumbel-max over max(0, p - q) with stream 2; bonus from p_{γ+1} with stream 0). The only
   tolerated disagreements are float near-ties (top-two score gap < 1e-5), and there are at most a few.
   The direct draws also go through the distribution test below (at lower power).
2. Statistical: the mirror, i.e. the same rule with the same Philox noise, runs on N_STAT = 2 * 10**5
   draws whose empirical distribution is tested against the exact target law.

(1) pins the reference to the rule bit for bit on thousands of draws -- any systematic deviation of the
reference would show up as mismatches long before it moved a probability by 1e-3 -- and (2) shows that
the rule with this noise has the right law. Together: the reference samples the right law.

Distribution test (`check`): for counts c_t over n draws and expected probabilities p_t,
  (a) p_t == 0  =>  c_t == 0 exactly (truncated tokens are never drawn);
  (b) per-category binomial z-score |z_t| = |c_t - n p_t| / sqrt(n p_t (1 - p_t)) < 5 for every category
      (two-sided normal tail 5.7e-7 each; all positive cells here have n p_t >= ~300 at N_STAT so the
      normal approximation holds);
  (c) total variation TV = 1/2 sum |c_t/n - p_t| <= 1/2 sum sqrt(p_t (1 - p_t) / n) + sqrt(ln(10**6) / (2n)):
      the first term bounds E[TV] (Jensen: E|f - p| <= sd), the second is McDiarmid's deviation (one draw
      moves TV by at most 1/n) with probability <= 1e-6 of being exceeded. Distribution-free.
Power: at n = 2e5 the sd of a frequency is at most sqrt(0.25 / n) = 1.1e-3 (6.7e-4 near p = 0.1), so a
0.01 absolute error in any probability is >= 8.9 sd, flagged by (b) with probability >= 1 - 5e-5 (> 0.999
for all cases here). Every case runs a negative control: the same counts against the expected law with
0.01 moved from one category to another must FAIL the test.
Philox is deterministic: each test either always passes or always fails for its fixed seed.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sonicsampler import reference as R
from sonicsampler import rng
from sonicsampler.params import SamplingParams

pytestmark = pytest.mark.slow

N_STAT = 200_000
N_DIRECT_SAMPLE = 5_000
N_DIRECT_VERIFY = 3_000
Z_MAX = 5.0
M32 = 0xFFFFFFFF
NEAR_TIE = 1e-5


# -------------------------------------------------------------------------------------------------
# The distribution test
# -------------------------------------------------------------------------------------------------
def check(counts: np.ndarray, p: np.ndarray) -> dict:
    counts = np.asarray(counts, dtype=np.float64).ravel()
    p = np.asarray(p, dtype=np.float64).ravel()
    n = counts.sum()
    f = counts / n
    zero = p == 0
    inner = (p > 0) & (p < 1)
    sd = np.sqrt(p * (1 - p) / n)
    z = np.zeros_like(p)
    z[inner] = (f[inner] - p[inner]) / sd[inner]
    tv = 0.5 * np.abs(f - p).sum()
    tv_bound = 0.5 * sd.sum() + math.sqrt(math.log(1e6) / (2 * n))
    res = dict(n=int(n), zero_hits=int(counts[zero].sum()), max_z=float(np.abs(z).max(initial=0.0)),
               tv=float(tv), tv_bound=float(tv_bound))
    res["ok"] = res["zero_hits"] == 0 and res["max_z"] < Z_MAX and tv <= tv_bound
    return res


def perturbed(p: np.ndarray, delta: float = 0.01) -> np.ndarray:
    """p with `delta` of mass moved from its most likely category to its least likely positive one."""
    q = np.asarray(p, dtype=np.float64).ravel().copy()
    pos = np.flatnonzero(q > 0)
    lo = pos[np.argmin(q[pos])]
    hi = int(np.argmax(q))
    q[hi] -= delta
    q[lo] += delta
    return q.reshape(np.shape(p))


def assert_law(counts, p, what: str, negative_control: bool = True):
    r = check(counts, p)
    assert r["ok"], f"{what}: {r}"
    if negative_control:
        bad = check(counts, perturbed(p))
        assert not bad["ok"], f"{what}: the test does not flag a 0.01 error: {bad}"


def test_check_flags_errors_and_accepts_exact_draws():
    """The test itself, on numpy multinomial draws: exact law passes, a 0.01 shift fails."""
    g = np.random.default_rng(0)
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0])
    for _ in range(20):
        c = g.multinomial(N_STAT, p)
        assert check(c, p)["ok"]
        assert not check(c, perturbed(p))["ok"]
    c = g.multinomial(N_STAT, p)
    c[5] = 1                                  # a single truncated token drawn
    assert not check(c, p)["ok"]


# -------------------------------------------------------------------------------------------------
# Vectorized Philox noise over many positions (rng's documented layout), checked against rng itself
# -------------------------------------------------------------------------------------------------
def uniform_grid(seed: int, positions: torch.Tensor, stream: int, v: int) -> torch.Tensor:
    """(n, v) float32: rng.uniforms(seed, positions[i], stream, arange(v)) for every i at once.

    Token t uses lane t & 3 of the Philox call with counter c0 = t >> 2, so one call per 4 tokens.
    """
    pos = positions.to(torch.int64)[:, None]
    c0 = torch.arange((v + 3) // 4, dtype=torch.int64)[None, :]
    z = torch.zeros_like(pos)
    w = rng.philox4x32(seed % (1 << 64), c0, pos & M32, z + stream, pos >> 32)     # 4 x (n, ceil(v/4))
    words = torch.stack(w, dim=2).reshape(pos.shape[0], -1)[:, :v]                # token 4 c0 + lane
    return rng.words_to_uniform(words)


def gumbel_grid(seed, positions, stream, v) -> torch.Tensor:
    u = uniform_grid(seed, positions, stream, v)
    return -torch.log(-torch.log(u))


def test_uniform_grid_is_rngs_noise():
    pos = torch.tensor([0, 1, 5, 2**32 - 1, 2**32, 2**40 + 3])
    for seed in (0, 7, 2**64 - 1):
        for stream in (0, 1, 2):
            grid = uniform_grid(seed, pos, stream, 13)
            for i, q in enumerate(pos.tolist()):
                assert torch.equal(grid[i], rng.uniforms(seed, q, stream, torch.arange(13)))


def gumbel_argmax(logw: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise argmax of logw + g over finite logw (first maximum), and the gap to the runner-up."""
    s = logw.double() + g.double()
    s = torch.where(torch.isfinite(logw), s, torch.full_like(s, -math.inf))
    top2 = torch.topk(s, 2, dim=1).values
    return torch.argmax(s, dim=1), top2[:, 0] - top2[:, 1]


def assert_agrees(ref_tokens: torch.Tensor, mirror_tokens: torch.Tensor, gaps: torch.Tensor, what: str):
    """Token-for-token agreement; a disagreement is tolerated only at a float near-tie (at most 3)."""
    diff = (ref_tokens != mirror_tokens).reshape(ref_tokens.shape[0], -1).any(dim=1)
    bad = diff & (gaps >= NEAR_TIE)
    assert not bad.any(), f"{what}: {int(bad.sum())} disagreements away from ties, e.g. trial {int(bad.nonzero()[0])}"
    assert int(diff.sum()) <= 3, f"{what}: {int(diff.sum())} near-tie disagreements"


def softmax_np(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.where(np.isfinite(x), np.exp(x - x[np.isfinite(x)].max()), 0.0)
    return e / e.sum()


# -------------------------------------------------------------------------------------------------
# reference.sample draws from reference.probs
# -------------------------------------------------------------------------------------------------
X12 = [1.2, 0.3, -0.5, 2.0, 0.8, -1.0, 0.0, 1.5, -0.2, 0.6, -1.5, 1.0]

SAMPLE_MIXES = {
    "plain": (dict(), None, None),
    "temperature_topk_topp": (dict(temperature=0.7, top_k=8, top_p=0.9), None, None),
    "min_p": (dict(temperature=1.3, min_p=0.1), None, None),
    "penalties_bias": (dict(repetition_penalty=1.3, frequency_penalty=0.4, presence_penalty=0.3,
                            logit_bias={2: 1.0, 5: -math.inf, 11: -0.5}), [0, 1, 6], [1, 3, 3, 9]),
}


@pytest.mark.parametrize("mix", list(SAMPLE_MIXES))
def test_sample_draws_from_probs(mix):
    kw, prompt, output = SAMPLE_MIXES[mix]
    seed = 0xC0FFEE + len(mix)
    params = SamplingParams(seed=seed, **kw)
    v = len(X12)
    row = torch.tensor([X12], dtype=torch.float32)
    opt = dict(prompt_token_ids=None if prompt is None else [prompt],
               output_token_ids=None if output is None else [output])
    p = R.probs(row, params, **opt)[0]
    assert abs(float(p.sum()) - 1) < 1e-12
    pn = p.numpy()
    if mix == "plain":   # sanity of the expected law itself
        np.testing.assert_allclose(pn, softmax_np(X12), rtol=0, atol=1e-7)
    assert pn[pn > 0].min() * N_STAT >= 300

    # mirror: Gumbel-max over the support of p with the sampling-stream noise at positions 0..n-1
    pos = torch.arange(N_STAT)
    mirror, gaps = gumbel_argmax(torch.log(p)[None, :].expand(N_STAT, v), gumbel_grid(seed, pos, 0, v))

    # direct: the reference on the first N_DIRECT_SAMPLE positions, one row each
    nd = N_DIRECT_SAMPLE
    out = R.sample(row.expand(nd, v), params, positions=pos[:nd],
                   prompt_token_ids=None if prompt is None else [prompt] * nd,
                   output_token_ids=None if output is None else [output] * nd)
    assert out.valid.all()
    assert_agrees(out.tokens, mirror[:nd], gaps[:nd], mix)
    assert check(np.bincount(out.tokens.numpy(), minlength=v), pn)["ok"]

    assert_law(np.bincount(mirror.numpy(), minlength=v), pn, mix)


# -------------------------------------------------------------------------------------------------
# reference.verify emits the target's law
# -------------------------------------------------------------------------------------------------
V6 = 6
XT = [[1.0, 0.2, -0.5, 1.5, 0.0, -1.0],       # target row 0
      [0.3, 1.1, -0.2, 0.4, 0.9, -0.7],       # target row 1
      [-0.3, 0.5, 1.2, 0.1, -0.8, 0.6]]       # target row 2 (bonus for γ = 2)


def mirror_verify(seed, pos, drafts, q, p_of):
    """The contract's chain rule, vectorized over trials.

    drafts (n, γ) int64; q (n, γ, V) float64 (dense draft probabilities; one-hot for greedy drafts);
    p_of(l, drafts[:, :l]) -> (n, V) float64 target probabilities of row l given the earlier drafts.
    Returns emitted tokens (n, γ+1) padded with -1, and per trial the smallest top-two score gap of the
    Gumbel draws it used (for near-tie tolerance).
    """
    n, gamma = drafts.shape
    v = q.shape[-1]
    tokens = torch.full((n, gamma + 1), -1, dtype=torch.int64)
    gap = torch.full((n,), math.inf, dtype=torch.float64)
    active = torch.ones(n, dtype=torch.bool)
    ar = torch.arange(n)
    for l in range(gamma + 1):
        p = p_of(l, drafts[:, :l])
        if l == gamma:                                   # bonus: ordinary draw from p_γ
            tok, gp = gumbel_argmax(torch.log(p), gumbel_grid(seed, pos + l, rng.STREAM_SAMPLE, v))
            tokens[active, l] = tok[active]
            gap[active] = torch.minimum(gap[active], gp[active])
            break
        d = drafts[:, l]
        u = uniform_grid(seed, pos + l, rng.STREAM_ACCEPT, 1)[:, 0].double()
        pd, qd = p[ar, d], q[ar, l, d]
        acc = (pd > 0) & (u * qd <= pd)
        resid = torch.clamp(p - q[:, l], min=0.0)
        empty = ~(resid.sum(dim=1) > 0)
        resid[empty] = p[empty]
        rtok, gp = gumbel_argmax(torch.log(resid), gumbel_grid(seed, pos + l, rng.STREAM_RESIDUAL, v))
        rej = active & ~acc
        tokens[rej, l] = rtok[rej]
        gap[rej] = torch.minimum(gap[rej], gp[rej])
        tokens[active & acc, l] = d[active & acc]
        active = active & acc
    return tokens, gap


def complete_pair(tokens: torch.Tensor, p1_given: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """(t0, t1) per trial; where only t0 was emitted, t1 is drawn from the target p_1(. | t0) with
    independent noise (what the next decoding step would do)."""
    t0 = tokens[:, 0].numpy()
    t1 = tokens[:, 1].numpy().copy()
    miss = t1 < 0
    cdf = np.cumsum(p1_given[t0[miss]], axis=1)
    u = g.random(miss.sum())[:, None]
    t1[miss] = np.minimum((u > cdf).sum(axis=1), p1_given.shape[1] - 1)
    return t0 * p1_given.shape[1] + t1


def draw_from(probs: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of `probs` (n, V) by inverse CDF."""
    cdf = np.cumsum(probs, axis=1)
    u = g.random(probs.shape[0])[:, None]
    return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)


def run_case(*, seed, gamma, params_kw, draft_kind, p_hand, output=None, trunc_note=""):
    """One verify case: direct agreement on N_DIRECT_VERIFY trials, law of t0 and (t0, t1) on N_STAT.

    p_hand(l, prefix_tuple) -> np.ndarray (V,): the target distribution of row l computed by hand.
    draft_kind: "dense", "dense_dependent" (q_1 depends on d_0), "sparse" or "onehot".
    """
    g = np.random.default_rng(seed)
    v = V6
    params = SamplingParams(seed=seed, **params_kw)
    out_ids = [] if output is None else list(output)

    # target rows through the reference, cross-checked against the hand-computed law
    def ref_probs(l, prefix):
        rows = torch.tensor([XT[l]], dtype=torch.float32)
        return R.probs(rows, params, output_token_ids=[out_ids + list(prefix)])[0]

    prefixes = {0: [()], 1: [(a,) for a in range(v)], 2: [(a, b) for a in range(v) for b in range(v)]}
    table = {}
    for l in range(gamma + 1):
        for pre in prefixes[l]:
            pr = ref_probs(l, pre)
            np.testing.assert_allclose(pr.numpy(), p_hand(l, pre), rtol=0, atol=1e-6)
            assert torch.equal(pr == 0, torch.from_numpy(p_hand(l, pre) == 0))
            table[(l, pre)] = pr

    def p_of(l, prefix):
        if l == 0:
            return table[(0, ())].expand(prefix.shape[0], v)
        stacked = torch.stack([table[(l, pre)] for pre in prefixes[l]])          # (V**l, V)
        idx = prefix[:, 0] if l == 1 else prefix[:, 0] * v + prefix[:, 1]
        return stacked[idx]

    # draft distributions and draft tokens drawn from them (independent numpy noise)
    n = N_STAT
    q = torch.zeros((n, gamma, v), dtype=torch.float64)
    drafts = torch.zeros((n, gamma), dtype=torch.int64)
    sparse = None
    if draft_kind in ("dense", "dense_dependent"):
        q0 = g.dirichlet(np.ones(v))
        q1_table = g.dirichlet(np.ones(v), size=v) if draft_kind == "dense_dependent" else np.tile(g.dirichlet(np.ones(v)), (v, 1))
        d0 = draw_from(np.tile(q0, (n, 1)), g)
        q[:, 0] = torch.from_numpy(q0)
        drafts[:, 0] = torch.from_numpy(d0)
        if gamma == 2:
            q1 = q1_table[d0]
            drafts[:, 1] = torch.from_numpy(draw_from(q1, g))
            q[:, 1] = torch.from_numpy(q1)
    elif draft_kind == "sparse":
        # K = 3 candidates per row, padded with -1 in row 0; drafts drawn from the candidates
        ids = np.array([[4, 0, -1], [1, 3, 5]])
        pr = np.array([[0.7, 0.3, 0.0], [0.5, 0.3, 0.2]])
        for l in range(gamma):
            k = draw_from(np.tile(pr[l][ids[l] >= 0], (n, 1)), g)
            drafts[:, l] = torch.from_numpy(ids[l][k])
            q[:, l, torch.from_numpy(ids[l][ids[l] >= 0])] = torch.from_numpy(pr[l][ids[l] >= 0])
        sparse = (torch.from_numpy(ids[:, :]).expand(n, -1, -1)[:, :gamma],
                  torch.from_numpy(pr).expand(n, -1, -1)[:, :gamma])
    elif draft_kind == "onehot":
        # deterministic drafts, an arbitrary function of the trial index
        i = torch.arange(n)
        drafts[:, 0] = i % v
        if gamma == 2:
            drafts[:, 1] = (i * 5 + 1) % v
        q.scatter_(2, drafts[:, :, None], 1.0)
    else:
        raise AssertionError(draft_kind)

    base = 2**32 - 3 * n // 2          # positions straddle 2**32; trials never share a position
    pos = base + (gamma + 1) * torch.arange(n, dtype=torch.int64)
    mirror, gaps = mirror_verify(seed, pos, drafts, q, p_of)

    # direct: the reference on the first trials
    nd = N_DIRECT_VERIFY
    logits = torch.tensor(XT[: gamma + 1], dtype=torch.float32).repeat(nd, 1)
    if draft_kind in ("dense", "dense_dependent"):
        dp = q[:nd].clone()
    elif draft_kind == "sparse":
        dp = R.SparseDraftProbs(sparse[0][:nd].clone(), sparse[1][:nd].clone())
    else:
        dp = None
    out = R.verify(logits, drafts[:nd], params, positions=pos[:nd], draft_probs=dp,
                   output_token_ids=[out_ids] * nd)
    assert out.valid.all()
    assert_agrees(out.tokens, mirror[:nd], gaps[:nd], f"verify {draft_kind} γ={gamma}")
    emitted = (mirror >= 0).sum(dim=1)
    assert torch.equal(out.num_emitted, emitted[:nd])
    assert torch.equal(out.num_accepted, emitted[:nd] - 1)

    # the law of the first emitted token: p_0
    p0 = p_hand(0, ())
    assert check(np.bincount(out.tokens[:, 0].numpy(), minlength=v), p0)["ok"], "direct t0"
    assert_law(np.bincount(mirror[:, 0].numpy(), minlength=v), p0, f"t0 {draft_kind}{trunc_note}")

    # the law of (t0, t1): p_0(a) p_1(b | a), completing single-token trials from the target
    p1_given = np.stack([p_hand(1, (a,)) for a in range(v)])
    joint = p0[:, None] * p1_given
    pairs = complete_pair(mirror, p1_given, g)
    assert_law(np.bincount(pairs, minlength=v * v), joint.ravel(), f"(t0, t1) {draft_kind}{trunc_note}")
    # some trials must have accepted and some rejected, or the case tests nothing
    acc_rate = float((emitted > 1).double().mean())
    assert 0.05 < acc_rate < 0.98, acc_rate
    return acc_rate


def plain_law(**kw):
    """Hand law of row l without penalties: softmax(XT[l] / T) (rows independent of earlier tokens)."""
    t = kw.get("temperature", 1.0)
    return lambda l, prefix: softmax_np(np.array(XT[l]) / t)


@pytest.mark.parametrize("gamma,draft_kind", [(1, "dense"), (2, "dense"), (2, "dense_dependent"),
                                              (2, "sparse"), (1, "onehot"), (2, "onehot")])
def test_verify_matches_target(gamma, draft_kind):
    run_case(seed=1000 + 10 * gamma + len(draft_kind), gamma=gamma, params_kw=dict(temperature=0.9),
             draft_kind=draft_kind, p_hand=plain_law(temperature=0.9))


def test_verify_target_truncated_below_draft_support():
    # top-k 3 at every target row: p has zeros where the dense q has mass (such drafts are always
    # rejected) -- token ranking by XT: row 0 keeps {3, 0, 1}, row 1 {1, 4, 3}, row 2 {2, 5, 1}
    def p_hand(l, prefix):
        keep = {0: [3, 0, 1], 1: [1, 4, 3], 2: [2, 5, 1]}[l]
        x = np.full(V6, -np.inf)
        x[keep] = np.array(XT[l])[keep]
        return softmax_np(x)
    run_case(seed=77, gamma=2, params_kw=dict(top_k=3), draft_kind="dense", p_hand=p_hand, trunc_note=" top-k")
    run_case(seed=78, gamma=1, params_kw=dict(top_k=3), draft_kind="onehot", p_hand=p_hand, trunc_note=" top-k")


def test_verify_penalties_make_row_1_depend_on_t0():
    # frequency 0.5 and presence 1.0 over the output so far ([2]) plus the accepted drafts: row l's law
    # depends on the tokens before it, p_1(. | t0) = softmax(XT[1] - 0.5 c - 1.0 [c > 0]), c counting [2, t0]
    f, pr = 0.5, 1.0

    def p_hand(l, prefix):
        c = np.bincount(np.array([2] + list(prefix), dtype=np.int64), minlength=V6).astype(np.float64)
        return softmax_np(np.array(XT[l]) - f * c - pr * (c > 0))
    run_case(seed=4321, gamma=2, params_kw=dict(frequency_penalty=f, presence_penalty=pr),
             draft_kind="dense_dependent", p_hand=p_hand, output=[2], trunc_note=" penalties")


def test_verify_greedy_target_is_the_argmax_chain():
    # temperature 0: t0 is always argmax(row 0) = 3; if d0 == 3 then t1 = argmax(row 1) = 1; if also
    # d1 == 1, the bonus t2 = argmax(row 2) = 2. Drafts uniformly random (numpy), 5000 trials.
    n = 5000
    g = np.random.default_rng(5)
    drafts = torch.from_numpy(g.integers(0, V6, size=(n, 2)))
    drafts[: n // 3, 0] = 3                         # make acceptance common
    drafts[: n // 6, 1] = 1
    logits = torch.tensor(XT, dtype=torch.float32).repeat(n, 1)
    out = R.verify(logits, drafts, SamplingParams(temperature=0.0), positions=torch.arange(n),
                   draft_probs=torch.full((n, 2, V6), 1 / V6, dtype=torch.float64))
    a0 = drafts[:, 0] == 3
    a1 = a0 & (drafts[:, 1] == 1)
    expected = torch.full((n, 3), -1, dtype=torch.int64)
    expected[:, 0] = 3
    expected[a0, 1] = 1
    expected[a1, 2] = 2
    assert torch.equal(out.tokens, expected)
    assert torch.equal(out.num_accepted, a0.long() + a1.long())
    assert 0 < int(a1.sum()) < int(a0.sum()) < n
