"""Plain-PyTorch implementation of ../shared/design/SEMANTICS.md: the tests' oracle and the CPU path.

Written for clarity, one row at a time; CPU or GPU tensors. Arithmetic on logits is fp32 (as the kernels
do it); normalizers and probabilities are float64. Random numbers come from `sonicsampler.rng`, which is
bit-identical to the kernels' Philox, so kernel and reference can be compared token for token.

Conventions (shared with the kernels, stated once here):
- A row is *invalid* (token -1, `valid = False`, no log-probabilities) when its processed logits contain
  NaN or +inf, or when every token is -inf (fully masked).
- Ranking (top-k boundary, top-p order, greedy argmax) uses the processed value rounded to the input
  dtype for bf16/fp16 inputs and the fp32 value for fp32 inputs; equal ranking values are ties, broken
  toward the lower token index.
- Greedy rows (temperature 0) take the argmax and touch no random numbers. Their "processed"
  log-probabilities are those of the processed logits (no temperature) over the truncation survivors.
- `logprobs=None` rows get `logprob = NaN`; top-n arrays are padded with token -1 and logprob -inf.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from . import rng
from .outputs import SampleOutput, SparseDraftProbs, VerifyOutput
from .params import SamplingParams, _is_int

_NEG_INF = float("-inf")


# ---------------------------------------------------------------------------------------------------
# Top-k
# ---------------------------------------------------------------------------------------------------
def topk(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest values of each row, sorted descending, ties toward the lower index.

    Returns (values in the input dtype, indices int64), each (N, k). -inf entries are never selected:
    rows with fewer than k other values are padded with value -inf and index -1. A row containing NaN
    is reported as all indices -1 and all values NaN (never ranked).
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be 2-D (rows, vocab), got shape {tuple(logits.shape)}")
    if not 1 <= k:
        raise ValueError(f"k must be >= 1, got {k}")
    n, v = logits.shape
    # A stable descending sort keeps equal values (and -0.0 == +0.0) in index order.
    vals, idx = torch.sort(logits, dim=1, descending=True, stable=True)
    kk = min(k, v)
    values = torch.full((n, k), _NEG_INF, dtype=logits.dtype, device=logits.device)
    indices = torch.full((n, k), -1, dtype=torch.int64, device=logits.device)
    values[:, :kk] = vals[:, :kk]
    indices[:, :kk] = idx[:, :kk]
    masked = values == _NEG_INF
    indices[masked] = -1
    nan_rows = torch.isnan(logits).any(dim=1)
    values[nan_rows] = float("nan")
    indices[nan_rows] = -1
    return values, indices


# ---------------------------------------------------------------------------------------------------
# One row's processing and truncation (SEMANTICS.md sections 1-2)
# ---------------------------------------------------------------------------------------------------
@dataclass
class _Row:
    x: torch.Tensor          # processed logits, fp32 (temperature applied for stochastic rows)
    rank: torch.Tensor       # ranking values (x rounded to the input dtype for 16-bit inputs)
    keep: torch.Tensor       # bool survivors of min-p, top-k, top-p
    valid: bool
    greedy: bool


def _bitmask_allowed(words: torch.Tensor, v: int) -> torch.Tensor:
    t = torch.arange(v, device=words.device)
    w = words.to(torch.int64)[t // 32]
    return ((w >> (t % 32)) & 1).bool()


def _order(rank: torch.Tensor, among: torch.Tensor) -> torch.Tensor:
    """Token indices of `among` sorted by ranking value descending, ties to the lower index."""
    ids = torch.nonzero(among).flatten()
    _, o = torch.sort(rank[ids].float(), descending=True, stable=True)
    return ids[o]


def _process_row(raw: torch.Tensor, p: SamplingParams, prompt: Sequence[int], output: Sequence[int],
                 mask_words: torch.Tensor | None) -> _Row:
    v = raw.numel()
    dev = raw.device
    x = raw.float().clone()
    # 1. grammar mask
    if mask_words is not None:
        x = torch.where(_bitmask_allowed(mask_words, v), x, torch.full_like(x, _NEG_INF))
    if p.repetition_penalty != 1.0 or p.frequency_penalty != 0.0 or p.presence_penalty != 0.0:
        counts = torch.bincount(torch.as_tensor(list(output), dtype=torch.int64, device=dev), minlength=v)[:v]
    # 2. repetition penalty on prompt or output tokens
    if p.repetition_penalty != 1.0:
        seen = counts > 0
        if len(prompt):
            seen[torch.as_tensor(list(prompt), dtype=torch.int64, device=dev)] = True
        r = torch.tensor(p.repetition_penalty, dtype=torch.float32)
        x = torch.where(seen, torch.where(x > 0, x / r, x * r), x)
    # 3. frequency and presence penalties on output tokens
    if p.frequency_penalty != 0.0 or p.presence_penalty != 0.0:
        c = counts.float()
        x = x - torch.tensor(p.frequency_penalty, dtype=torch.float32) * c \
              - torch.tensor(p.presence_penalty, dtype=torch.float32) * (c > 0).float()
    # 4. logit bias
    if p.logit_bias:
        ids = torch.as_tensor(list(p.logit_bias.keys()), dtype=torch.int64, device=dev)
        b = torch.as_tensor(list(p.logit_bias.values()), dtype=torch.float32, device=dev)
        x[ids] = x[ids] + b
    # 5. temperature
    greedy = p.greedy
    t = 1.0 if greedy else p.temperature   # greedy rows: no temperature (their logprobs use T = 1)
    if t != 1.0:
        x = x / torch.tensor(t, dtype=torch.float32)

    # valid: no NaN, no +inf, some token > -inf. The max propagates NaN, so one reduction decides it.
    valid = math.isfinite(float(x.max()))
    rank = x.to(raw.dtype) if raw.dtype in (torch.bfloat16, torch.float16) else x
    keep = x > _NEG_INF
    if not valid:
        return _Row(x, rank, torch.zeros_like(keep), False, greedy)
    # Truncation, in order: min-p, top-k, top-p.
    if p.min_p > 0.0:
        thr = rank[keep].float().max() + torch.tensor(math.log(p.min_p), dtype=torch.float32)
        keep = keep & (rank.float() >= thr)
    if p.top_k_active(v):
        order = _order(rank, keep)
        keep = torch.zeros_like(keep)
        keep[order[: p.top_k]] = True
    if p.top_p < 1.0:
        order = _order(rank, keep)
        probs = torch.softmax(x[order].double(), dim=0)
        before = torch.cumsum(probs, 0) - probs   # mass strictly before each token
        keep = torch.zeros_like(keep)
        keep[order[before < p.top_p]] = True
    return _Row(x, rank, keep, True, greedy)


def _greedy_token(row: _Row) -> int:
    return int(_order(row.rank, row.keep)[0])


# (row, token) pairs per batched Philox call: bounds its int64 temporaries (~0.5 MiB each; much larger
# ones only add page faults, ~150 tensor ops allocate one each).
_NOISE_PAIRS = 1 << 16


def _gumbel_argmax(logw: Sequence[torch.Tensor], keep: Sequence[torch.Tensor], seeds: Sequence[int],
                   positions: Sequence[int], stream: int) -> list[int]:
    """Gumbel-max draws of many rows at once: for each row r (logw[r], keep[r]: 1-D tensors of length V,
    or the rows of 2-D tensors), the token

        argmax over {t : keep[r][t]} of logw[r][t] + g(seeds[r], positions[r], stream, t),

    ties to the lower token index (torch.argmax returns the first maximum). The score is computed in
    logw's dtype. Every row must keep at least one token. Batched Philox calls draw the noise of all
    (row, token) pairs, each pair with its row's seed and position (rows in chunks of about _NOISE_PAIRS
    pairs): bit for bit the noise `rng.gumbel(seed, position, stream, survivors)` gives row by row,
    computed on the CPU as the row-by-row reference always did.
    """
    if len(logw) == 0:
        return []
    step = max(1, _NOISE_PAIRS // max(logw[0].numel(), 1))
    out: list[int] = []
    for lo in range(0, len(logw), step):
        w = logw[lo: lo + step] if torch.is_tensor(logw) else torch.stack(list(logw[lo: lo + step]))
        k = keep[lo: lo + step] if torch.is_tensor(keep) else torch.stack(list(keep[lo: lo + step]))
        r, t = torch.nonzero(k.cpu(), as_tuple=True)
        g = rng.gumbel(rng.as_int64(seeds[lo: lo + step])[r], rng.as_int64(positions[lo: lo + step])[r],
                       stream, t)
        r, t = r.to(w.device), t.to(w.device)
        score = torch.full_like(w, _NEG_INF)
        score[r, t] = w[r, t] + g.to(w.device, w.dtype)
        out += torch.argmax(score, dim=1).tolist()
    return out


def _row_probs(row: _Row) -> torch.Tensor:
    """The exact final distribution of a row (float64): softmax over survivors; one-hot for greedy."""
    out = torch.zeros(row.x.numel(), dtype=torch.float64, device=row.x.device)
    if not row.valid:
        return out
    if row.greedy:
        out[_greedy_token(row)] = 1.0
        return out
    out[row.keep] = torch.softmax(row.x[row.keep].double(), dim=0)
    return out


# ---------------------------------------------------------------------------------------------------
# Batch helpers
# ---------------------------------------------------------------------------------------------------
def _param_list(params, n: int) -> list[SamplingParams]:
    if isinstance(params, SamplingParams):
        params = [params] * n
    params = list(params)
    if len(params) != n:
        raise ValueError(f"params: expected one SamplingParams or {n} of them, got {len(params)}")
    for i, p in enumerate(params):
        if p.seed is None and not p.greedy:
            raise ValueError(f"request {i}: seed: the reference needs resolved seeds (SamplingParams.resolved())")
    return params


def _token_lists(ids, n: int, name: str, v: int) -> list[list[int]]:
    """One list of token ids per row, each an integer in 0..v-1 (anything else raises, naming the row:
    an id outside the vocabulary used to be dropped from the counts or to fail deep in indexing)."""
    if ids is None:
        return [[] for _ in range(n)]
    ids = list(ids)
    if len(ids) != n:
        raise ValueError(f"{name}: expected {n} sequences, got {len(ids)}")
    rows = []
    for i, s in enumerate(ids):
        row = s.tolist() if torch.is_tensor(s) else list(s)
        bad = [t for t in row if not _is_int(t) or not 0 <= t < v]
        if bad:
            raise ValueError(f"{name}: row {i}: token {bad[0]!r} is not an integer id in 0..{v - 1}")
        rows.append([int(t) for t in row])
    return rows


def _positions(positions, n: int) -> list[int]:
    pos = positions.tolist() if torch.is_tensor(positions) else list(positions)
    if len(pos) != n:
        raise ValueError(f"positions: expected {n} values, got {len(pos)}")
    return [int(q) for q in pos]


def _rows(logits, params, prompt_token_ids, output_token_ids, grammar_bitmask):
    n, v = logits.shape
    params = _param_list(params, n)
    prompts = _token_lists(prompt_token_ids, n, "prompt_token_ids", v)
    outputs = _token_lists(output_token_ids, n, "output_token_ids", v)
    checked: set[int] = set()
    for i in range(n):
        if id(params[i]) not in checked:      # each distinct SamplingParams object is validated once
            params[i].validate(vocab_size=v, request=i)
            checked.add(id(params[i]))
        mask = None if grammar_bitmask is None else grammar_bitmask[i]
        yield params[i], _process_row(logits[i], params[i], prompts[i], outputs[i], mask)


# ---------------------------------------------------------------------------------------------------
# Log-probabilities (SEMANTICS.md section 4)
# ---------------------------------------------------------------------------------------------------
def _logprob_vector(raw: torch.Tensor, row: _Row, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities over V in float64, ranking values used to order them)."""
    if mode == "raw":
        lp = torch.log_softmax(raw.double(), dim=0)
        return lp, raw
    lp = torch.full((raw.numel(),), _NEG_INF, dtype=torch.float64, device=raw.device)
    lp[row.keep] = torch.log_softmax(row.x[row.keep].double(), dim=0)
    rank = torch.where(row.keep, row.rank.float(), torch.full_like(row.rank.float(), _NEG_INF))
    return lp, rank


def _top_n(lp: torch.Tensor, rank: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    order = _order(rank, lp > _NEG_INF)[:n]
    ids = torch.full((n,), -1, dtype=torch.int64, device=lp.device)
    vals = torch.full((n,), _NEG_INF, dtype=torch.float64, device=lp.device)
    ids[: order.numel()] = order
    vals[: order.numel()] = lp[order]
    return ids, vals


# ---------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------
def probs(logits: torch.Tensor, params, *, positions=None, prompt_token_ids=None, output_token_ids=None,
          grammar_bitmask=None) -> torch.Tensor:
    """(N, V) float64: each row's exact final distribution (zeros for invalid rows, one-hot for greedy).

    `positions` is accepted for symmetry with `sample`; the distribution does not depend on it.
    """
    rows = [_row_probs(r) for _, r in _rows(logits, params, prompt_token_ids, output_token_ids, grammar_bitmask)]
    return torch.stack(rows) if rows else torch.zeros((0, logits.shape[1]), dtype=torch.float64)


def sample(logits: torch.Tensor, params, *, positions, prompt_token_ids=None, output_token_ids=None,
           grammar_bitmask=None) -> SampleOutput:
    """One token per row, exactly as SEMANTICS.md defines it (Gumbel-max with Philox noise)."""
    n, _ = logits.shape
    pos = _positions(positions, n)
    dev = logits.device
    logprob = torch.full((n,), float("nan"), dtype=torch.float32, device=dev)
    plist = _param_list(params, n)
    n_max = max([p.logprobs or 0 for p in plist], default=0)
    top_ids = torch.full((n, n_max), -1, dtype=torch.int64, device=dev)
    top_lp = torch.full((n, n_max), _NEG_INF, dtype=torch.float32, device=dev)
    # Every row is processed first; then one batched Gumbel-max draws the tokens of all stochastic rows.
    rows = list(_rows(logits, plist, prompt_token_ids, output_token_ids, grammar_bitmask))
    stochastic = [i for i, (_, row) in enumerate(rows) if row.valid and not row.greedy]
    drawn = dict(zip(stochastic, _gumbel_argmax(
        [rows[i][1].x for i in stochastic], [rows[i][1].keep for i in stochastic],
        [plist[i].seed_u64 for i in stochastic], [pos[i] for i in stochastic], rng.STREAM_SAMPLE)))
    toks = [-1] * n
    for i, (p, row) in enumerate(rows):
        if not row.valid:
            if p.logprobs is not None:
                top_lp[i, : p.logprobs] = float("nan")
            continue
        tok = toks[i] = drawn[i] if i in drawn else _greedy_token(row)
        if p.logprobs is not None:
            lp, rank = _logprob_vector(logits[i], row, p.logprobs_mode)
            logprob[i] = lp[tok]
            ids, vals = _top_n(lp, rank, p.logprobs)
            top_ids[i, : p.logprobs], top_lp[i, : p.logprobs] = ids, vals.float()
    tokens = torch.tensor(toks, dtype=torch.int64, device=dev)
    valid = tokens >= 0
    return SampleOutput(tokens, valid, logprob, top_ids, top_lp,
                        exact=torch.ones(n, dtype=torch.bool, device=dev),
                        dropped_mass=torch.zeros(n, dtype=torch.float32, device=dev))


def _draft_q(draft_probs, b: int, l: int, v: int, d: int, device) -> torch.Tensor:
    """The draft distribution q_l of request b as a dense float64 vector (one-hot when absent)."""
    q = torch.zeros(v, dtype=torch.float64, device=device)
    if draft_probs is None:
        q[d] = 1.0
    elif isinstance(draft_probs, SparseDraftProbs):
        ids = draft_probs.token_ids[b, l].to(torch.int64)
        ok = ids >= 0
        q[ids[ok]] = draft_probs.probs[b, l][ok].double()
    else:
        q[:] = draft_probs[b, l].double()
    return q


def verify(target_logits: torch.Tensor, draft_token_ids: torch.Tensor, params, *, positions,
           num_draft_tokens=None, draft_probs=None, prompt_token_ids=None, output_token_ids=None,
           grammar_bitmask=None) -> VerifyOutput:
    """Speculative chain verification (SEMANTICS.md section 5).

    target_logits (B*(γ+1), V), request-major: rows b*(γ+1) + l for l = 0..γ. draft_token_ids (B, γ).
    params: one SamplingParams per request (or one for all). positions (B,): the position of the token
    generated at each request's first target row (row l generates position positions[b] + l).
    num_draft_tokens (B,): ragged draft counts n_b <= γ (rows past n_b are ignored); None = all γ.
    draft_probs: None (one-hot drafts), dense (B, γ, V), or SparseDraftProbs.
    output_token_ids: per request, the tokens generated before this step; target row l also counts the
    l draft tokens before it (they were accepted if row l is reached).
    grammar_bitmask: (B*(γ+1), ceil(V/32)) per target row, or None.
    Log-probabilities (per request, as in `sample`): `logprob` of each emitted token, and the top-n of
    the row it came from (`top_token_ids` / `top_logprobs`, (B, γ+1, n_max); positions not emitted are
    padded with -1 / -inf like the lanes past a request's n).
    """
    bsz, gamma = draft_token_ids.shape
    rows_total, v = target_logits.shape
    if rows_total != bsz * (gamma + 1):
        raise ValueError(f"target_logits: expected {bsz * (gamma + 1)} rows (B*(γ+1)), got {rows_total}")
    dev = target_logits.device
    plist = _param_list(params, bsz)
    pos = _positions(positions, bsz)
    prompts = _token_lists(prompt_token_ids, bsz, "prompt_token_ids", v)
    outputs = _token_lists(output_token_ids, bsz, "output_token_ids", v)
    counts = [gamma] * bsz if num_draft_tokens is None else [int(c) for c in num_draft_tokens]
    drafts: list[list[int]] = []
    checked: set[int] = set()
    for b in range(bsz):
        if id(plist[b]) not in checked:       # each distinct SamplingParams object is validated once
            plist[b].validate(vocab_size=v, request=b)
            checked.add(id(plist[b]))
        if not 0 <= counts[b] <= gamma:
            raise ValueError(f"request {b}: num_draft_tokens must be in 0..{gamma}, got {counts[b]}")
        drafts.append([int(t) for t in draft_token_ids[b, : counts[b]].tolist()])
    emitted: list[list[int]] = [[] for _ in range(bsz)]
    valid = [True] * bsz
    n_acc = [0] * bsz
    rows: dict[tuple[int, int], _Row] = {}   # (b, l) -> processed target row l of request b

    # Phase l handles target row l of every request still going (all of its drafts before l accepted).
    # Each request follows the row-by-row rule of SEMANTICS.md section 5; the random numbers of a phase
    # (acceptance uniforms, residual and bonus draws) are drawn in batched calls, each request with its
    # own seed and position (row l generates position positions[b] + l).
    going = list(range(bsz))
    for l in range(gamma + 1):
        accepted: list[int] = []           # requests whose draft d_l is accepted: they go on to row l + 1
        bonus: list[int] = []              # stochastic requests drawing their bonus token from p_l
        test: list[int] = []               # stochastic requests testing their draft d_l
        for b in going:
            p = plist[b]
            r = b * (gamma + 1) + l
            mask = None if grammar_bitmask is None else grammar_bitmask[r]
            row = rows[b, l] = _process_row(target_logits[r], p, prompts[b], outputs[b] + drafts[b][:l], mask)
            if not row.valid:
                valid[b] = False
            elif l == counts[b]:           # bonus position: an ordinary draw from p_l
                if row.greedy:
                    emitted[b].append(_greedy_token(row))
                else:
                    bonus.append(b)
            elif row.greedy:               # accept while d_l is the target argmax, else emit the argmax
                best = _greedy_token(row)
                emitted[b].append(best)
                if best == drafts[b][l]:
                    accepted.append(b)
                    n_acc[b] += 1
            else:
                test.append(b)
        if bonus:
            drawn = _gumbel_argmax([rows[b, l].x for b in bonus], [rows[b, l].keep for b in bonus],
                                   [plist[b].seed_u64 for b in bonus], [pos[b] + l for b in bonus],
                                   rng.STREAM_SAMPLE)
            for b, tok in zip(bonus, drawn):
                emitted[b].append(tok)
        if test:
            # accept d iff u * q(d) <= p(d) (and p(d) > 0), u from the acceptance stream; float64
            pl = torch.stack([_row_probs(rows[b, l]) for b in test])
            q = torch.stack([_draft_q(draft_probs, b, l, v, drafts[b][l], dev) for b in test])
            d = torch.tensor([drafts[b][l] for b in test], dtype=torch.int64, device=dev)
            u = rng.uniforms(rng.as_int64([plist[b].seed_u64 for b in test]), rng.as_int64([pos[b] + l for b in test]),
                             rng.STREAM_ACCEPT, torch.zeros(len(test), dtype=torch.int64))
            at = torch.arange(len(test), device=dev)
            pd, qd = pl[at, d], q[at, d]
            accept = ((pd > 0) & (u.to(dev, torch.float64) * qd <= pd)).tolist()
            # at the first rejection: a draw from normalize(max(0, p - q)), or from p itself where p <= q
            # everywhere (numerically)
            resid = torch.clamp(pl - q, min=0.0)
            empty = ~(resid.sum(dim=1) > 0)
            resid[empty] = pl[empty]
            rejected = [i for i, a in enumerate(accept) if not a]
            drawn = _gumbel_argmax(torch.log(resid[rejected]), resid[rejected] > 0,
                                   [plist[test[i]].seed_u64 for i in rejected], [pos[test[i]] + l for i in rejected],
                                   rng.STREAM_RESIDUAL)
            for i, tok in zip(rejected, drawn):
                emitted[test[i]].append(tok)
            for b, a in zip(test, accept):
                if a:
                    emitted[b].append(drafts[b][l])
                    accepted.append(b)
                    n_acc[b] += 1
        going = sorted(accepted)

    tokens = torch.tensor([e + [-1] * (gamma + 1 - len(e)) for e in emitted], dtype=torch.int64,
                          device=dev).reshape(bsz, gamma + 1)
    logprob = torch.full((bsz, gamma + 1), float("nan"), dtype=torch.float32, device=dev)
    n_max = max([p.logprobs or 0 for p in plist], default=0)
    top_ids = torch.full((bsz, gamma + 1, n_max), -1, dtype=torch.int64, device=dev)
    top_lp = torch.full((bsz, gamma + 1, n_max), _NEG_INF, dtype=torch.float32, device=dev)
    for b in range(bsz):
        n_b = plist[b].logprobs
        if n_b is not None:
            for l, tok in enumerate(emitted[b]):
                lp, rank = _logprob_vector(target_logits[b * (gamma + 1) + l], rows[b, l], plist[b].logprobs_mode)
                logprob[b, l] = lp[tok]
                ids, vals = _top_n(lp, rank, n_b)
                top_ids[b, l, :n_b], top_lp[b, l, :n_b] = ids, vals.float()
    return VerifyOutput(tokens, torch.tensor([len(e) for e in emitted], dtype=torch.int64, device=dev),
                        torch.tensor(n_acc, dtype=torch.int64, device=dev),
                        torch.tensor(valid, dtype=torch.bool, device=dev), logprob,
                        top_token_ids=top_ids, top_logprobs=top_lp)
