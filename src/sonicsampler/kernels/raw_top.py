"""Raw top-n log-probabilities of rows whose processing reorders tokens (Sampler._raw_top).

Such rows' candidates are ranked on processed values, so their raw top-n comes from an exact top-k of
the raw logits (topk.topk_launched). This kernel writes it into the rows' outputs, one program per row:
log-probability = raw value - the row's raw log-normalizer (stage 2's, exact over the vocabulary).
It replaces about a dozen small torch operations (their host time and launches) with one launch.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from .sample import row_slot

LOGPROBS = tl.constexpr(bits.LOGPROBS)
LOGPROBS_PROCESSED = tl.constexpr(bits.LOGPROBS_PROCESSED)


@triton.jit
def raw_top_fill(vals_ptr, ids_ptr, slots_ptr, flags_ptr, n_logprobs_ptr, max_slots, valid_ptr, raw_lse_ptr,
                 top_ids_ptr, top_lp_ptr, n_top, missing, TOP_PAD: tl.constexpr):
    """Row `program_id` of (n, n_top) outputs, for raw-logprobs rows only (other rows untouched): the
    first n (the request's logprobs) of the top-k `vals` / `ids`, in order. A row that is not valid
    gets ids -1 and log-probabilities `missing` there; a valid row whose raw normalizer is NaN (a raw
    NaN or +inf) ranks no token (ids -1, -inf); lanes past n get -1 and -inf."""
    row = tl.program_id(0).to(tl.int64)
    slot, flags = row_slot(slots_ptr, flags_ptr, row, max_slots)
    raw_mode = ((flags & LOGPROBS) != 0) & ((flags & LOGPROBS_PROCESSED) == 0)
    if raw_mode:
        j = tl.arange(0, TOP_PAD)
        lane = j < n_top
        valid = tl.load(valid_ptr + row).to(tl.int32)
        lse = tl.load(raw_lse_ptr + row)
        asked = j < tl.load(n_logprobs_ptr + slot)
        v = tl.load(vals_ptr + row * n_top + j, mask=lane, other=0.0).to(tl.float32)
        ids = tl.load(ids_ptr + row * n_top + j, mask=lane, other=-1)
        # (The row's condition as an int first: the interpreter cannot combine 0-d booleans with |.)
        ranked_or_invalid = ((lse == lse).to(tl.int32) + (valid == 0).to(tl.int32)) > 0
        take = asked & ranked_or_invalid
        lp = tl.where(valid != 0, v - lse, missing)
        tl.store(top_lp_ptr + row * n_top + j, tl.where(take, lp, float("-inf")), mask=lane)
        tl.store(top_ids_ptr + row * n_top + j, tl.where(take & (valid != 0), ids, -1), mask=lane)
