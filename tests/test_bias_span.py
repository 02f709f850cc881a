"""Logit bias applied tile by tile (prologue.process with SPAN): a tile adds only the entries whose ids lie
in its own range, tested once per entry. Biased ids sit on every tile's first and last id, where an
off-by-one that narrows that range drops a bias (a wider range is harmless), on each path that processes
whole tiles: stage 1 (each strategy), stage 1's per-tile Gumbel-max of untruncated rows, stage 2's re-reading of a saturated
tile (tile.processed_tile) and the long rows' sub-tiles (long_rows._set_tile). Against reference.sample:
tokens, log-probabilities and top-n ids."""

import pytest
import torch

from sonicsampler import SamplingParams
from sonicsampler.sampler import sample

from test_sampler import check_against_reference

pytestmark = pytest.mark.interpreter

V = 600
BOUND = 32
BLOCK = 256
EDGES = [0, 255, 256, 511, 512, 599]     # first and last ids of the tiles of 256 (the last one partial)


def _rows():
    params = []
    # one greedy row per edge, its bias large enough to make that id the argmax: the token says whether
    # the bias was added (processed log-probabilities say whether it was added once)
    for e in EDGES:
        params.append(SamplingParams(temperature=0.0, logit_bias={e: 40.0}, logprobs=3, logprobs_mode="processed"))
    # every edge biased at once with mixed signs, one masked: a top-k row and a top-p row with processed
    # top-n, so each biased value shows in the log-probabilities
    bias = {0: 6.0, 255: -5.0, 256: 7.5, 511: float("-inf"), 512: 6.5, 599: 5.0, 300: 1.0}
    params.append(SamplingParams(temperature=0.8, top_k=6, logit_bias=bias, seed=3, logprobs=6,
                                 logprobs_mode="processed"))
    params.append(SamplingParams(top_p=0.7, logit_bias=bias, seed=4, logprobs=4, logprobs_mode="processed"))
    # five of the top six in one tile, its first or its last id the fifth: with tiles emitting 4 keys that
    # id comes only from stage 2's re-reading of the saturated tile (processed_tile)
    for edge, other in ((256, 511), (511, 256)):
        params.append(SamplingParams(temperature=0.7, top_k=6, seed=7, logprobs=6, logprobs_mode="processed",
                                     logit_bias={other: 20.0, 300: 18.0, 400: 16.0, 450: 14.0, edge: 12.0}))
    # a nucleus far past the bound (long_rows' passes over sub-tiles) and an untruncated row (stage 1's
    # per-tile Gumbel-max), both with the edges biased up
    up = {e: 3.0 for e in EDGES}
    params.append(SamplingParams(temperature=1.5, top_p=0.99, logit_bias=up, seed=5, logprobs=5,
                                 logprobs_mode="processed"))
    params.append(SamplingParams(logit_bias=up, seed=6, logprobs=5, logprobs_mode="processed"))
    # a row whose bias masks its best id, the last of the vocabulary: the next one is on a tile's edge
    params.append(SamplingParams(temperature=0.0, logit_bias={599: float("-inf")}))
    return params


@pytest.mark.parametrize("strategy,emit", [("bitonic", BOUND), ("rank", 4), ("extract", BOUND), ("extract", 4)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_bias_on_tile_edges_matches_the_reference(strategy, emit, dtype):
    gen = torch.Generator().manual_seed(11)
    params = _rows()
    n = len(params)
    logits = (1.5 * torch.randn(n, V, generator=gen)).to(dtype)
    logits[-1] = float("-inf")
    logits[-1, 599] = 0.0
    logits[-1, 256] = -1.0     # the row's only finite id once 599 is masked by its bias
    prompts = [[] for _ in range(n)]
    outputs = [[] for _ in range(n)]
    positions = list(range(40, 40 + n))
    out = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                 bound=BOUND, block=BLOCK, strategy=strategy, emit=emit)
    e, q = check_against_reference(logits, params, positions, prompts, outputs, out)
    assert e == n and q == n
    assert out.tokens[: len(EDGES)].tolist() == EDGES
    assert int(out.tokens[-1]) == 256
