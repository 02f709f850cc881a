"""Speculative verification on the Sampler's state (`Sampler.verify`): validation and the two launches.

Stage 1 is the sampler's stage 1 over all B·(γ+1) target rows (per-row slots and positions expanded
from the requests', draft tokens as pending output for the penalties); stage 2 is one program per
target row, and the last row of each request to finish assembles the request (kernels/verify.py).
No host synchronization and no data-dependent allocation: with slots, positions, draft ids and draft
counts given as device tensors the call is CUDA-graph capturable. Given as host lists or CPU tensors
they are validated first, like `Sampler.sample`'s.
"""
from __future__ import annotations

import torch

from .errors import SamplingInputError
from .kernels.sample import sample_stage1
from .kernels.verify import verify_stage2
from .launch import int_spec
from .outputs import SparseDraftProbs, VerifyOutput, addresses, check_verify_out, kept_check
from .topk import _pow2_at_least

_ONE_HOT, _DENSE, _SPARSE = 0, 1, 2     # kernels/verify.py's DRAFT constexpr

# Stage 1 (the sampler's, PENDING): its constexprs before drafts_ptr, passed positionally so that the
# draft ids and rows per request (which change between calls) can be passed as leading arguments.
_NAMES1 = sample_stage1.arg_names
_STAGE1_CONSTEXPRS = tuple(_NAMES1[_NAMES1.index("BLOCK_LOG2"):_NAMES1.index("drafts_ptr")])
# The launch arguments that can change between calls of one plan (launch.Launcher): stage 1's target
# logits, stride, row slots and positions, mask, its stride, drafts and rows per request; stage 2's
# the same (the requests' slots and positions), the drafts and their probabilities, the per-row
# scratch (it may grow), the outputs and the top-n width.
# Named, in the order the launches pass their values.
_DYNAMIC1 = tuple(map(_NAMES1.index, ("logits_ptr", "stride_row", "slots_ptr", "positions_ptr", "mask_ptr",
                                      "mask_stride", "drafts_ptr", "rows_per_request")))
_DYNAMIC2 = tuple(map(verify_stage2.arg_names.index, (
    "logits_ptr", "stride_row", "req_slots_ptr", "req_pos_ptr", "mask_ptr", "mask_stride", "drafts_ptr", "gamma",
    "n_draft_ptr", "q_ptr", "q_stride_b", "q_stride_l", "q_ids_ptr", "qi_stride_b", "qi_stride_l", "K",
    "res_tok_ptr", "res_bits_ptr", "res_lp_ptr", "arrived_ptr", "tokens_ptr", "n_emit_ptr", "n_acc_ptr",
    "valid_ptr", "logprob_ptr", "exact_ptr", "top_ids_ptr", "top_lp_ptr", "N_TOP")))


def _capturing(dev) -> bool:
    """Whether the current stream of `dev` is being captured into a CUDA graph."""
    return dev.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _stage1_options(plan) -> dict:
    """Stage 1's keyword constexprs and launch options for verification: the plan's, less those passed
    positionally, with every row's candidates (verification needs them)."""
    c = {k: val for k, val in plan["const1"].items() if k not in _STAGE1_CONSTEXPRS}
    return dict(c, PENDING=True, SKIP_UNTRUNCATED=False)


def _draft_ids(sampler, draft_token_ids, dev):
    """(B, γ) int64 contiguous draft ids on `dev`, and their host values when given on the host."""
    if not torch.is_tensor(draft_token_ids) or draft_token_ids.dim() != 2:
        raise SamplingInputError("draft_token_ids", f"must be a (B, γ) tensor, got "
                                 f"{tuple(getattr(draft_token_ids, 'shape', ())) or type(draft_token_ids).__name__}")
    if draft_token_ids.dtype not in (torch.int32, torch.int64):
        raise SamplingInputError("draft_token_ids", f"dtype must be int32 or int64, got {draft_token_ids.dtype}")
    if sampler.on_host(draft_token_ids):
        return draft_token_ids.to(dev, torch.int64).contiguous(), draft_token_ids.tolist()
    if draft_token_ids.device != dev:
        raise SamplingInputError("draft_token_ids", f"is on {draft_token_ids.device}, the Sampler's state is on {dev}")
    if draft_token_ids.dtype is torch.int64 and draft_token_ids.is_contiguous():
        return draft_token_ids, None   # as the kernels read it: no conversion call (host time)
    return draft_token_ids.to(torch.int64).contiguous(), None


def _draft_probs(draft_probs, bsz, gamma, v, dev):
    """(DRAFT kind, q tensor, q strides, ids tensor, ids strides, K) for the kernel."""
    if draft_probs is None:
        return _ONE_HOT, None, (0, 0), None, (0, 0), 0
    if isinstance(draft_probs, SparseDraftProbs):
        ids, probs = draft_probs.token_ids, draft_probs.probs
        for name, t, dtypes in (("draft_probs.token_ids", ids, (torch.int32, torch.int64)),
                                ("draft_probs.probs", probs, (torch.float32,))):
            if not torch.is_tensor(t) or t.dim() != 3 or t.shape[:2] != (bsz, gamma) or t.shape[2] < 1:
                raise SamplingInputError(name, f"must be a ({bsz}, {gamma}, K) tensor with K >= 1, got "
                                         f"{tuple(getattr(t, 'shape', ())) or type(t).__name__}")
            if t.dtype not in dtypes or t.device != dev or t.stride(2) != 1:
                raise SamplingInputError(name, f"must be {' or '.join(map(str, dtypes))} on {dev} with a contiguous "
                                         f"last dimension, got {t.dtype} on {t.device}")
        if ids.shape != probs.shape:
            raise SamplingInputError("draft_probs", f"token_ids {tuple(ids.shape)} and probs {tuple(probs.shape)} differ")
        c = draft_probs.complete
        if c is not None and (not torch.is_tensor(c) or c.shape != (bsz, gamma) or c.dtype != torch.bool
                              or c.device != dev):
            raise SamplingInputError("draft_probs.complete", f"must be a bool ({bsz}, {gamma}) tensor on {dev}, got "
                                     f"{getattr(c, 'dtype', type(c).__name__)} {tuple(getattr(c, 'shape', ()))}")
        return _SPARSE, probs, probs.stride()[:2], ids, ids.stride()[:2], ids.shape[2]
    q = draft_probs
    if not torch.is_tensor(q) or q.shape != (bsz, gamma, v):
        raise SamplingInputError("draft_probs", f"must be None, SparseDraftProbs or a ({bsz}, {gamma}, {v}) tensor, got "
                                 f"{tuple(getattr(q, 'shape', ())) or type(q).__name__}")
    if q.dtype != torch.float32 or q.device != dev or q.stride(2) != 1:
        raise SamplingInputError("draft_probs", f"must be float32 on {dev} with a contiguous last dimension, "
                                 f"got {q.dtype} on {q.device}")
    return _DENSE, q, q.stride()[:2], None, (0, 0), 0


def _new_outputs(bsz, g, n_top, dev, no_top):
    """Uninitialised outputs (stage 2 writes every element): tokens, num_emitted, num_accepted, valid,
    exact, logprob, top_token_ids, top_logprobs. A function of its own so that tests can poison them.
    no_top: the launch plan's (B, γ+1, 0) top-n views, which give the kernel a real pointer where
    n_top = 0 (it stores nothing there)."""
    empty = torch.empty
    top_ids, top_lp = (empty((bsz, g, n_top), dtype=torch.int64, device=dev),
                       empty((bsz, g, n_top), dtype=torch.float32, device=dev)) if n_top else no_top
    return (empty((bsz, g), dtype=torch.int64, device=dev), empty(bsz, dtype=torch.int64, device=dev),
            empty(bsz, dtype=torch.int64, device=dev), empty(bsz, dtype=torch.int8, device=dev),
            empty(bsz, dtype=torch.int8, device=dev), empty((bsz, g), dtype=torch.float32, device=dev),
            top_ids, top_lp)


def _launch_plan(sampler, plan, bsz, g, kind, dev) -> dict:
    """What verification's launches take besides the per-call tensors, for one Sampler plan, batch and
    draft kind: stage 2's per-row results and arrival counters (scratch), the (B, γ+1, 0) top-n
    outputs, the draft pointer of γ = 0, both launches' constexpr dicts. Made once and kept (their
    construction was about a fifth of an eager call's host time), except under CUDA-graph capture,
    where a new zeroed buffer's fill would only run at the graph's replays."""
    key = (plan["key"], bsz, g, kind)
    vp = sampler._verify_plans.get(key)
    if vp is not None:
        return vp
    n = bsz * g
    sc = sampler._scratch
    vp = {"res_tok": sc.get("verify_tok", n, torch.int64, dev),
          "res_bits": sc.get("verify_bits", n, torch.int32, dev),
          "res_lp": sc.get("verify_lp", n, torch.float32, dev),
          # one arrival counter per request (kernels/verify.py): zero at the start, and the last row of
          # each request returns its counter to zero
          "arrived": sc.get("verify_arrived", bsz, torch.int32, dev, zeroed=True),
          "no_drafts": sc.get("verify_no_drafts", bsz, torch.int64, dev),     # any pointer
          # (B, γ+1, 0) top-n outputs, views of a real allocation: a zero-size one may have a null address
          "no_top": (torch.empty(1, dtype=torch.int64, device=dev)[:0].view(bsz, g, 0),
                     torch.empty(1, dtype=torch.float32, device=dev)[:0].view(bsz, g, 0)),
          "opts1": _stage1_options(plan),
          "consts2": dict(G_PAD=_pow2_at_least(g), DRAFT=kind,
                          **{name: plan["const2"][name] for name in ("TOP_PAD", "TOP_N", "RAW_TOP_FROM_CANDIDATES")},
                          **plan["rows2"])}
    # their addresses, as verification's stage 2 takes them (ints: launch.Launcher's direct launch)
    vp["addresses"] = addresses(vp[name] for name in ("res_tok", "res_bits", "res_lp", "arrived"))
    if not _capturing(dev):
        sampler._verify_plans[key] = vp
    return vp


def _request_checks(sampler, gamma: int):
    """Per-request checks of host values (Sampler._rows' `check`), each raising naming the request: a
    slot (holding a request, one request per slot), a position (room for γ more), a draft count (0..γ)."""
    seen: dict[int, int] = {}

    def check_slot(i, s):
        sampler._check_slot(i, s)
        if s in seen:
            raise SamplingInputError("slots", f"slot {s} is also request {seen[s]}'s: one request per slot", i)
        seen[s] = i

    def check_position(i, p):
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < (1 << 63) - gamma:
            raise SamplingInputError("positions", f"must be an integer in [0, 2**63 - γ), got {p!r}", i)

    def check_count(i, c):
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= gamma:
            raise SamplingInputError("num_draft_tokens", f"must be an integer in 0..{gamma}, got {c!r}", i)

    return check_slot, check_position, check_count


def verify(sampler, target_logits, draft_token_ids, slots, positions, *, num_draft_tokens=None, draft_probs=None,
           grammar_bitmask=None, out=None, _penalised=None, _tops=None) -> VerifyOutput:
    # _penalised (Sampler.warmup_verify): plan for a batch with (True) or without penalties, bias or a
    # mask whatever the admitted requests say, so that both variants compile before serving.
    t, v = sampler.table, sampler.vocab_size
    dev = t.device
    ids, ids_host = _draft_ids(sampler, draft_token_ids, dev)
    bsz, gamma = ids.shape
    g = gamma + 1
    n = bsz * g
    if sampler._logits_rows(target_logits, "target_logits", " (B*(γ+1) rows, request-major)") != n:
        sampler.check_logits("target_logits", target_logits, n, " (B*(γ+1) rows, request-major)")

    if sampler._rows_kept(slots, positions, bsz):   # the last call's device slots and positions (sample's too)
        slots_dev, pos_dev, slots_host = slots, positions, None
    else:
        check_slot, check_position, _ = _request_checks(sampler, gamma)
        slots_dev, slots_host = sampler._rows("slots", slots, bsz, check_slot, per="request")
        pos_dev, _ = sampler._rows("positions", positions, bsz, check_position, per="request")
        sampler._keep_rows(slots, positions, slots_dev, pos_dev, bsz)
    if num_draft_tokens is None:
        # γ for every request, kept per (B, γ): the kernels only read it (a fill launch per call before).
        # Not kept when made under CUDA-graph capture: the fill would only run at the graph's replays.
        counts_dev = sampler._full_drafts.get((bsz, gamma))
        if counts_dev is None:
            counts_dev = torch.full((bsz,), gamma, dtype=torch.int64, device=dev)
            if not _capturing(dev):
                sampler._full_drafts[(bsz, gamma)] = counts_dev
        counts_host = None
    else:
        counts_dev, counts_host = sampler._rows("num_draft_tokens", num_draft_tokens, bsz,
                                                _request_checks(sampler, gamma)[2], per="request")
    if ids_host is not None:
        for b in range(bsz):
            nb = gamma if counts_host is None else counts_host[b]
            bad = [d for d in ids_host[b][:nb] if not 0 <= d < v]
            if bad:
                raise SamplingInputError("draft_token_ids", f"token {bad[0]} is outside the vocabulary of size {v}", b)
    kind, q, q_strides, q_ids, qi_strides, k = _draft_probs(draft_probs, bsz, gamma, v, dev)
    if grammar_bitmask is not None:
        sampler.check_grammar_bitmask(grammar_bitmask, n)

    has_mask = grammar_bitmask is not None
    n_top, raw_rows_processed, penalised, _shared = sampler._batch_summary(slots_host, has_mask)
    if _penalised is not None:
        penalised = _penalised
    if _tops is not None:   # (Sampler.warmup_verify) the top-n width and raw top-k flag to plan for
        n_top, raw_rows_processed = _tops
    # The Sampler's own launch plan for B*(γ+1) rows: configuration, scratch, constexprs; and
    # verification's own part of it.
    plan = sampler._plan(n, target_logits.dtype, has_mask, n_top, raw_rows_processed, penalised=penalised,
                         verify=True)
    vp = _launch_plan(sampler, plan, bsz, g, kind, dev)
    if out is None:
        tokens, n_emit, n_acc, valid, exact, logprob, top_ids, top_lp = _new_outputs(bsz, g, n_top, dev, vp["no_top"])
        result, outs = None, addresses((tokens, n_emit, n_acc, valid, logprob, exact, top_ids, top_lp))
    else:   # the caller's buffers (Sampler.verify(out=...)); the kernels store int8 at valid / exact
        # checked once for the same buffers (outputs.kept_check)
        sampler._verify_out_checked, outs = kept_check(sampler._verify_out_checked, (bsz, g, n_top), out,
                                                       _verify_out_held, (n_top, vp["no_top"]), check_verify_out,
                                                       (bsz, g, n_top, dev))
        tokens, n_emit, n_acc, logprob = out.tokens, out.num_emitted, out.num_accepted, out.logprob
        valid, exact = out.valid, out.exact
        top_ids, top_lp = (out.top_token_ids, out.top_logprobs) if n_top else vp["no_top"]
        result = out
    if bsz == 0:
        return result if result is not None else VerifyOutput(
            tokens, n_emit, n_acc, valid.view(torch.bool), logprob, exact.view(torch.bool), top_ids, top_lp)

    # Stage 1 takes the requests' slots and positions (PENDING: row l of a request generates its
    # position + l): no per-row tensors, each of which was a torch launch before ours.
    drafts = ids if gamma > 0 else vp["no_drafts"]
    z, sc = plan["z"], plan["scratch"]
    stride = target_logits.stride(0)
    mask, mask_stride = sampler.mask_args(grammar_bitmask)
    q_arg = q if q is not None else drafts           # unused pointers (the DRAFT kind prunes their loads)
    ids_arg = q_ids if q_ids is not None else drafts
    res_tok, res_bits, res_lp, arrived = vp["res_tok"], vp["res_bits"], vp["res_lp"], vp["arrived"]
    # Both launches through launch.Launcher (as sample's), given the per-call addresses as ints, each
    # read once; the key holds what Triton specialises on among them (16-byte alignment, the ids'
    # dtype; the integers' int_spec). The whole argument tuples are built on a key's first launch.
    a_logits, a_slots, a_pos, a_mask = target_logits.data_ptr(), slots_dev.data_ptr(), pos_dev.data_ptr(), mask.data_ptr()
    a_drafts, a_counts, a_q, a_ids = drafts.data_ptr(), counts_dev.data_ptr(), q_arg.data_ptr(), ids_arg.data_ptr()
    key = ("verify", plan["key"], g, kind, a_logits & 15 == 0, int_spec(stride), a_slots & 15 == 0, a_pos & 15 == 0,
           a_mask & 15 == 0, int_spec(mask_stride), a_drafts & 15 == 0, int_spec(gamma), a_counts & 15 == 0,
           a_q & 15 == 0, *map(int_spec, q_strides), a_ids & 15 == 0, ids_arg.dtype, *map(int_spec, qi_strides),
           int_spec(k), int_spec(n_top))
    head1 = (a_logits, stride, a_slots, a_pos, a_mask, mask_stride)

    def args1():
        c = plan["const1"]
        return (target_logits, stride, v, slots_dev, t.max_slots, pos_dev, t.flags,
                *sampler.prologue_args(grammar_bitmask), t.seed, sc["cand"], sc["compact"], sc["stats"], sc["best"],
                sc["best_idx"], z,
                *(c[name] for name in _STAGE1_CONSTEXPRS), drafts, g)

    sampler._stage1.launch((z * n,), key, head1 + (a_drafts, g), args1, vp["opts1"], _DYNAMIC1)
    i8 = torch.int8
    sampler._verify2.launch(
        (n,), key, head1 + (a_drafts, gamma, a_counts, a_q, *q_strides, a_ids, *qi_strides, k, *vp["addresses"],
                            *outs, n_top),
        lambda: (target_logits, stride, v, slots_dev, t.max_slots, pos_dev, t.flags,
                 *sampler.prologue_args(grammar_bitmask), t.top_k, t.top_p, t.log_min_p, t.seed,
                 drafts, gamma, counts_dev, q_arg, *q_strides, ids_arg, *qi_strides, k,
                 sc["cand"], sc["stats"], sc["best"], sc["best_idx"], sc["refill"], sc["hist"], z,
                 res_tok, res_bits, res_lp, arrived, tokens, n_emit, n_acc, valid.view(i8), logprob, exact.view(i8),
                 t.n_logprobs, sc["raw_lse"], top_ids, top_lp, n_top),
        vp["consts2"], _DYNAMIC2)
    if raw_rows_processed and n_top > 0:
        # Raw top-n of rows whose processing reorders tokens, as in sample: an exact top-n of the
        # logits, kept for the emitted positions only (the others stay padded).
        emitted = (torch.arange(g, device=dev)[None, :] < n_emit[:, None]).reshape(n)
        row_slots = slots_dev[:, None].expand(bsz, g).reshape(n)
        sampler._raw_top(target_logits, row_slots, emitted, sc["raw_lse"], n_top, top_ids.view(n, n_top),
                         top_lp.view(n, n_top), missing=float("-inf"))
    exact_b = exact.view(torch.bool) if exact.dtype is not torch.bool else exact
    if kind == _SPARSE and draft_probs.complete is not None and gamma > 0:
        # A draft step whose distribution reaches past its entries has unknown q outside them.
        exact_b &= draft_probs.complete.all(dim=1)
    return result if result is not None else VerifyOutput(tokens, n_emit, n_acc, valid.view(torch.bool), logprob,
                                                          exact_b, top_ids, top_lp)


def _verify_out_held(out: VerifyOutput, n_top: int, no_top) -> tuple[tuple, tuple]:
    """(the tensors a VerifyOutput holds, the addresses the kernels write at: tokens, num_emitted,
    num_accepted, valid, logprob, exact, top-n ids and log-probabilities (no_top's without a width));
    an AttributeError where a field is not a tensor."""
    held = (out.tokens, out.num_emitted, out.num_accepted, out.valid, out.logprob, out.exact, out.top_token_ids,
            out.top_logprobs)
    return held, addresses(held if n_top else held[:6] + tuple(no_top))
