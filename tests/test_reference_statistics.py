"""In-distribution properties of the reference (SEMANTICS.md sections 3 and 5), on the reference's own draws.

* `reference.sample` draws from `reference.probs` (Gumbel-max with Philox noise is an exact draw):
  N_SAMPLE = 2 * 10**5 draws per case, in one `reference.sample` call of N identical rows at positions
  0..N-1 (one request's consecutive tokens).
* `reference.verify` emits sequences distributed exactly as sampling from the target alone
  (Leviathan et al.), for dense, sparse and one-hot drafts, targets truncated below the draft's support,
  penalties that make row 1 depend on the token emitted at row 0, and greedy targets: N_VERIFY = 10**5
  trials per case, each trial one request (its own position, so its own noise), in `reference.verify`
  calls of VERIFY_BATCH requests.

Every draw counted below comes out of `reference.sample` / `reference.verify` themselves. (The reference
draws the noise of a whole batch in batched Philox calls; tests/test_reference.py checks that this gives,
token for token, what one scalar `rng` call per row gives.)

Distribution test (`check`): for counts c_t over n draws and expected probabilities p_t,
  (a) p_t == 0  =>  c_t == 0 exactly (truncated tokens are never drawn);
  (b) per-category binomial z-score |z_t| = |c_t - n p_t| / sqrt(n p_t (1 - p_t)) < 5 for every category
      (two-sided normal tail 5.7e-7 each). Expected counts n p_t: >= 1695 in every sample case, >= 1363
      for t0 and >= 127 for (t0, t1) in the verify cases, except the penalty case whose smallest joint
      cells expect 17 draws; the exact binomial probability of |z_t| >= 5 is <= 1.9e-6 at n p_t >= 100 and
      <= 1.8e-5 at n p_t >= MIN_EXPECTED = 10 (asserted for every case);
  (c) total variation TV = 1/2 sum |c_t/n - p_t| <= 1/2 sum sqrt(p_t (1 - p_t) / n) + sqrt(ln(10**6) / (2n)):
      the first term bounds E[TV] (Jensen: E|f - p| <= sd), the second is McDiarmid's deviation (one draw
      moves TV by at most 1/n) with probability <= 1e-6 of being exceeded. Distribution-free.
Power: the sd of a frequency is at most sqrt(0.25 / n): 1.1e-3 at n = 2e5 (sample), 1.6e-3 at n = 1e5
(verify). A 0.01 absolute error in any probability is then >= 8.9 sd for sample, flagged by (b) with
probability >= 1 - 5e-5; for verify it is >= 6.3 sd, flagged with probability >= 0.9 in the worst case
(p near 1/2) and > 1 - 1e-7 wherever p <= 0.1 (>= 10.5 sd). Every case runs a negative control: the
same counts against the expected law with 0.01 moved from one category to another must FAIL the test.
Philox is deterministic: each test either always passes or always fails for its fixed seed.

Verify runs 10**5 trials per case (sample 2 * 10**5) to keep the file within a few CPU-minutes: the
reference processes each target row in Python, ~0.1 ms per request.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sonicsampler import reference as R
from sonicsampler.params import SamplingParams

pytestmark = pytest.mark.slow

N_SAMPLE = 200_000
N_VERIFY = 100_000
VERIFY_BATCH = 25_000
MIN_EXPECTED = 10
Z_MAX = 5.0


@pytest.fixture(autouse=True, scope="module")
def one_intra_op_thread():
    """The reference's work here is many small tensor ops: a second intra-op thread only adds wake-up
    latency, and on a loaded 2-core machine it made the file several times slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


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
    p = np.asarray(p, dtype=np.float64)
    n = int(np.sum(counts))
    assert p[p > 0].min() * n >= MIN_EXPECTED, f"{what}: a positive cell expects < {MIN_EXPECTED} draws"
    r = check(counts, p)
    assert r["ok"], f"{what}: {r}"
    if negative_control:
        bad = check(counts, perturbed(p))
        assert not bad["ok"], f"{what}: the test does not flag a 0.01 error: {bad}"


def test_check_flags_errors_and_accepts_exact_draws():
    """The test itself, on numpy multinomial draws: exact law passes, a 0.01 shift fails."""
    g = np.random.default_rng(0)
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0])
    for n in (N_VERIFY, N_SAMPLE):
        for _ in range(20):
            c = g.multinomial(n, p)
            assert check(c, p)["ok"]
            assert not check(c, perturbed(p))["ok"]
        c = g.multinomial(n, p)
        c[5] = 1                                  # a single truncated token drawn
        assert not check(c, p)["ok"]


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
    params = SamplingParams(seed=0xC0FFEE + len(mix), **kw)
    v = len(X12)
    row = torch.tensor([X12], dtype=torch.float32)
    opt = dict(prompt_token_ids=None if prompt is None else [prompt],
               output_token_ids=None if output is None else [output])
    p = R.probs(row, params, **opt)[0]
    assert abs(float(p.sum()) - 1) < 1e-12
    pn = p.numpy()
    if mix == "plain":   # sanity of the expected law itself
        np.testing.assert_allclose(pn, softmax_np(X12), rtol=0, atol=1e-7)

    n = N_SAMPLE
    out = R.sample(row.expand(n, v), params, positions=torch.arange(n),
                   prompt_token_ids=None if prompt is None else [prompt] * n,
                   output_token_ids=None if output is None else [output] * n)
    assert out.valid.all()
    assert_law(np.bincount(out.tokens.numpy(), minlength=v), pn, mix)


# -------------------------------------------------------------------------------------------------
# reference.verify emits the target's law
# -------------------------------------------------------------------------------------------------
V6 = 6
XT = [[1.0, 0.2, -0.5, 1.5, 0.0, -1.0],       # target row 0
      [0.3, 1.1, -0.2, 0.4, 0.9, -0.7],       # target row 1
      [-0.3, 0.5, 1.2, 0.1, -0.8, 0.6]]       # target row 2 (bonus for γ = 2)


def complete_pair(tokens: np.ndarray, p1_given: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """(t0, t1) per trial as one index t0 * V + t1; where only t0 was emitted, t1 is drawn from the target
    p_1(. | t0) with independent numpy noise (what the next decoding step would do)."""
    t0 = tokens[:, 0]
    t1 = tokens[:, 1].copy()
    miss = t1 < 0
    t1[miss] = draw_from(p1_given[t0[miss]], g)
    return t0 * p1_given.shape[1] + t1


def draw_from(probs: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of `probs` (n, V) by inverse CDF."""
    cdf = np.cumsum(probs, axis=1)
    u = g.random(probs.shape[0])[:, None]
    return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)


def draft_inputs(draft_kind: str, n: int, gamma: int, g: np.random.Generator):
    """Draft tokens (n, γ) drawn from the draft distribution (independent numpy noise), and the
    draft_probs argument for trials [lo, hi): a function (lo, hi) -> None | dense | SparseDraftProbs.

    draft_kind: "dense", "dense_dependent" (q_1 depends on d_0), "sparse" or "onehot".
    """
    v = V6
    drafts = np.zeros((n, gamma), dtype=np.int64)
    if draft_kind in ("dense", "dense_dependent"):
        q0 = g.dirichlet(np.ones(v))
        q1_table = g.dirichlet(np.ones(v), size=v) if draft_kind == "dense_dependent" else np.tile(g.dirichlet(np.ones(v)), (v, 1))
        q = np.zeros((n, gamma, v))
        q[:, 0] = q0
        drafts[:, 0] = draw_from(np.tile(q0, (n, 1)), g)
        if gamma == 2:
            q[:, 1] = q1_table[drafts[:, 0]]
            drafts[:, 1] = draw_from(q[:, 1], g)
        q = torch.from_numpy(q)
        return torch.from_numpy(drafts), lambda lo, hi: q[lo:hi]
    if draft_kind == "sparse":
        # K = 3 candidates per row, padded with -1 in row 0; drafts drawn from the candidates
        ids = np.array([[4, 0, -1], [1, 3, 5]])[:gamma]
        pr = np.array([[0.7, 0.3, 0.0], [0.5, 0.3, 0.2]])[:gamma]
        for l in range(gamma):
            k = draw_from(np.tile(pr[l][ids[l] >= 0], (n, 1)), g)
            drafts[:, l] = ids[l][k]
        ids_t, pr_t = torch.from_numpy(ids), torch.from_numpy(pr)
        return torch.from_numpy(drafts), lambda lo, hi: R.SparseDraftProbs(ids_t.expand(hi - lo, -1, -1),
                                                                           pr_t.expand(hi - lo, -1, -1))
    if draft_kind == "onehot":
        # deterministic drafts, an arbitrary function of the trial index
        i = np.arange(n)
        drafts[:, 0] = i % v
        if gamma == 2:
            drafts[:, 1] = (i * 5 + 1) % v
        return torch.from_numpy(drafts), lambda lo, hi: None
    raise AssertionError(draft_kind)


def run_verify(params, gamma, drafts, draft_probs_of, pos, out_ids) -> R.VerifyOutput:
    """reference.verify on every trial (one request each), VERIFY_BATCH requests per call."""
    n = drafts.shape[0]
    outs = []
    for lo in range(0, n, VERIFY_BATCH):
        hi = min(n, lo + VERIFY_BATCH)
        logits = torch.tensor(XT[: gamma + 1], dtype=torch.float32).repeat(hi - lo, 1)
        outs.append(R.verify(logits, drafts[lo:hi], params, positions=pos[lo:hi],
                             draft_probs=draft_probs_of(lo, hi), output_token_ids=[out_ids] * (hi - lo)))
    return R.VerifyOutput(*(torch.cat([getattr(o, f) for o in outs])
                            for f in ("tokens", "num_emitted", "num_accepted", "valid", "logprob")))


def run_case(*, seed, gamma, params_kw, draft_kind, p_hand, output=None, trunc_note=""):
    """One verify case: the law of t0 and of (t0, t1) over N_VERIFY trials of reference.verify.

    p_hand(l, prefix_tuple) -> np.ndarray (V,): the target distribution of row l computed by hand.
    """
    g = np.random.default_rng(seed)
    v = V6
    params = SamplingParams(seed=seed, **params_kw)
    out_ids = [] if output is None else list(output)

    # the reference's target rows agree with the hand-computed law
    prefixes = {0: [()], 1: [(a,) for a in range(v)], 2: [(a, b) for a in range(v) for b in range(v)]}
    for l in range(gamma + 1):
        for pre in prefixes[l]:
            pr = R.probs(torch.tensor([XT[l]], dtype=torch.float32), params,
                         output_token_ids=[out_ids + list(pre)])[0].numpy()
            np.testing.assert_allclose(pr, p_hand(l, pre), rtol=0, atol=1e-6)
            assert np.array_equal(pr == 0, p_hand(l, pre) == 0)

    n = N_VERIFY
    drafts, draft_probs_of = draft_inputs(draft_kind, n, gamma, g)
    base = 2**32 - 3 * n // 2          # positions straddle 2**32; trials never share a position
    pos = base + (gamma + 1) * torch.arange(n, dtype=torch.int64)
    out = run_verify(params, gamma, drafts, draft_probs_of, pos, out_ids)
    assert out.valid.all()
    emitted = (out.tokens >= 0).sum(dim=1)
    assert torch.equal(out.num_emitted, emitted)
    assert torch.equal(out.num_accepted, emitted - 1)
    tokens = out.tokens.numpy()
    # accepted drafts are emitted as they are; at most one token after them
    for l in range(gamma):
        acc = out.num_accepted.numpy() > l
        assert np.array_equal(tokens[acc, l], drafts.numpy()[acc, l])

    # the law of the first emitted token: p_0
    p0 = p_hand(0, ())
    assert_law(np.bincount(tokens[:, 0], minlength=v), p0, f"t0 {draft_kind}{trunc_note}")

    # the law of (t0, t1): p_0(a) p_1(b | a), completing single-token trials from the target
    p1_given = np.stack([p_hand(1, (a,)) for a in range(v)])
    joint = p0[:, None] * p1_given
    pairs = complete_pair(tokens, p1_given, g)
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
