"""The draft distribution q_l of speculative verification inside a kernel, and the residual
max(0, p - q) it leaves when a draft is rejected (SEMANTICS.md section 5). Shared by verification's
bounded path (kernels/verify.py) and the exact passes over whole rows (kernels/long_rows.py)."""
import triton
import triton.language as tl

# How the draft distribution q is given (the launcher's DRAFT constexpr).
DRAFT_ONE_HOT = tl.constexpr(0)   # none: q_l is one-hot at d_l
DRAFT_DENSE = tl.constexpr(1)     # (B, γ, V) probabilities
DRAFT_SPARSE = tl.constexpr(2)    # (B, γ, K) token ids (-1 = padding) and probabilities


@triton.jit
def draft_q(tok, live, d, q_ptr, q_ids_ptr, K, lo, hi, DRAFT: tl.constexpr):
    """q_l at a block of token ids (all in lo..hi-1): one-hot at d, the dense row at q_ptr, or the sum
    of the sparse entries (q_ids_ptr[j], q_ptr[j]), j < K, naming each token (ids are distinct)."""
    if DRAFT == DRAFT_ONE_HOT:
        q = tl.where(tok == d, 1.0, 0.0)
    elif DRAFT == DRAFT_DENSE:
        q = tl.load(q_ptr + tok, mask=live, other=0.0).to(tl.float32)
    else:
        q = tl.zeros(tok.shape, tl.float32)
        j = 0
        while j < K:
            t = tl.load(q_ids_ptr + j).to(tl.int64)
            if (t >= lo) & (t < hi):      # most entries miss a given tile: skip their block work
                q += tl.where(tok == t, tl.load(q_ptr + j).to(tl.float32), 0.0)
            j += 1
    return q


@triton.jit
def residual_scores(x, log_final, live, q, g):
    """Gumbel scores of the residual max(0, p - q) and of p itself (the fallback where the residual is
    empty), and the block's residual mass. log(p) is taken as x - log_final where q is 0 (exact, no
    underflow), log(p - q) elsewhere."""
    lp = x - log_final
    resid = tl.where(live, tl.maximum(tl.exp(lp) - q, 0.0), 0.0)
    lr = tl.where(q > 0, tl.log(resid), lp)
    s_resid = tl.where(live & (lr > float("-inf")), lr + g, float("-inf"))
    s_p = tl.where(live, lp + g, float("-inf"))
    return s_resid, s_p, tl.sum(resid)


@triton.jit
def better_of(s1, t1, s2, t2):
    """The better of two (score, token) pairs: the higher score, the lower token on ties."""
    second = (s2 > s1) | ((s2 == s1) & (t2 < t1))
    return tl.where(second, s2, s1), tl.where(second, t2, t1)


@triton.jit
def argmax_lowest(score, tok):
    """(best score, lowest token id reaching it) of a block; ties go to the lower id, as the reference.
    One block reduction carrying both (a max, then a min over the ties, took two)."""
    return tl.reduce((score, tok), 0, better_of)
