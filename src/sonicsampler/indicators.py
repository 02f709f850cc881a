"""Indicator bits of a request (one int32 per slot): the single source for the host (slots.py) and the
kernels (kernels/prologue.py, kernels/sample.py), which wrap these values as tl.constexpr."""
ACTIVE = 1 << 0
REPETITION = 1 << 1
FREQUENCY = 1 << 2
PRESENCE = 1 << 3
BIAS = 1 << 4
TEMPERATURE = 1 << 5
GREEDY = 1 << 6
TOP_K = 1 << 7
TOP_P = 1 << 8
MIN_P = 1 << 9
LOGPROBS = 1 << 10
LOGPROBS_PROCESSED = 1 << 11
TOP_LOGPROBS = 1 << 12          # top-n log-probabilities asked (n >= 1)
# The request's truncated set may hold more than the Sampler's bound (min-p or top-p without a top-k within
# the bound, or a top-k above it): stage 2's SHARED variant shares exact passes only in batches with such a row.
MAY_EXCEED = 1 << 13
# The request's outputs need no full-vocabulary processed normalizer (slots.normalizer_free): a top-k within
# the bound (its set and processed log-probabilities are the candidates'), or greedy (the argmax) without
# processed log-probabilities. Stage 1 then takes only each tile's maximum (which still flags NaN and
# +inf), not its sum of exponentials of processed values (raw log-probabilities have their own sum).
NORMALIZER_FREE = 1 << 14

# Processing that can change the order of tokens (raw top-n log-probabilities then need their own pass).
REORDERING = REPETITION | FREQUENCY | PRESENCE | BIAS
# Rows that are not untruncated stochastic rows (those draw from the full softmax exactly).
NOT_UNTRUNCATED = GREEDY | TOP_K | TOP_P | MIN_P
