"""Sampler: one decode step's sampling for a batch of rows, in two launches (kernels/sample.py).

The engine admits each request once (`add_request`), then calls `sample(logits, slots, positions)`
every step. Row i belongs to slot slots[i] and generates the token at positions[i]. Everything a
request wants is in the device-resident SlotTable, so a step does no per-request host work. Slots and
positions given as host lists (or CPU tensors) are validated before launch. Given as CUDA tensors
(the CUDA-graph path), they are used as they are: a row whose slot holds no request yields token -1
and valid = False.
"""
from __future__ import annotations

import math
from array import array
from typing import NamedTuple

import torch

from . import indicators as bits
from . import verification
from .errors import SamplingInputError
from .kernels import INTERPRETED
from .kernels import long_rows, shared_sets
from .kernels.sample import sample_stage1, sample_stage2
from .kernels.verify import verify_stage2
from .launch import Launcher, int_spec, tensor_spec
from .pdl import stage2_options
from .outputs import SampleOutput, SparseDraftProbs, VerifyOutput, addresses, check_out, kept_check
from .params import MAX_LOGPROBS, SamplingParams
from .slots import SlotTable, row_kinds
from .kernels.raw_top import raw_top_fill
from .topk import _log2, _NEG_INF_KEY, _pow2_at_least, _Scratch, topk_launched
from .tuning import STRATEGIES, SampleConfig, sample_config, topk_config

_SUPPORTED = tuple(_NEG_INF_KEY)
# Sub-tile of the exact passes over a whole row (kernels/long_rows.py). 4096 spilled ~1 KB per thread in
# the sm_90 compile (the search's (sub-tile, 16) sums) and ran a bf16 long batch 2x slower (run 60).
LONG_BLOCK = 1024
# Chunks each exact pass is cut into, that stage 2's programs share (kernels/shared_sets.py).
LONG_CHUNKS = 16
# Rows a helping program looks at per load of the board.
_BOARD_ROWS_LOG2 = 7
# Whether the warm-ups launch: the interpreter compiles nothing, so under it they only plan (a test
# turns this on to run them).
_WARMUP_LAUNCHES = not INTERPRETED


class Sampler:
    """Per-request state on the device plus the scratch of the two launches.

    bound: candidates per row (power of two, at most 128). Truncated sets that fit it are settled from
    the candidates; larger ones (min-p, top-k above the bound, top-p, in any combination) by exact
    passes over the row in stage 2, shared by its programs (kernels/shared_sets.py: a lone row at
    V = 151936 on an H100 takes ~32 µs for min-p alone, ~97 µs for a nucleus; run 95). Untruncated rows
    (no top-k, top-p, min-p) are exact draws from the full softmax. Every row is exact
    (`SampleOutput.exact`) unless allow_bounded_approximation=True asks for the paper's behaviour:
    sample among the best `bound` tokens (faster: no noise for every token, no passes), with such rows
    flagged and the dropped mass reported.
    block, emit, warps, strategy, regs: launch configuration overrides; by default they come per batch
    size from the measured table (sonicsampler.tuning.sample_config). regs: each stage's register cap
    per thread (0: none). long_block: the sub-tile of the exact passes over rows whose set exceeds the
    bound (kernels/long_rows.py); by default the smaller of `block` (when given) and LONG_BLOCK.
    long_chunks: the chunks (a power of two) each such pass is cut into, which all of stage 2's
    programs share (kernels/shared_sets.py), in batches of more than long_chunks rows;
    long_chunks_small (default 8 * long_chunks, halved on a GPU until each chunk has a program of its
    own: _chunks): the chunks in smaller batches, where helper programs past the rows run them. Every
    sum of the passes is an integer sum, so no result depends on either. long_claim: how many of those
    chunks a program takes at once (0: chosen in the kernel, the chunks left in the posted passes shared
    among the programs); it changes who runs which chunk, never a result. long_fill (default on): batches of
    more than long_chunks rows that leave at least long_chunks SMs free also get helper programs up to one
    per SM, and passes of long_chunks_small chunks halved until the free SMs hold them
    (sampler._fill_programs), as batches of up to long_chunks rows do; without it a 32-row batch runs its
    long rows' 16-chunk passes on its 32 programs alone (run 233 on an H100: the long nucleus 1 in 16 at
    32 / 64 / 96 rows 38.7 / 58.2 / 76.2 µs with it against 47.7 / 63.4 / 81.7 without; the all-bounded
    batch pays 0.4-0.5 µs). On an H100 64 chunks were
    faster than 16 up to 16 rows and slower from 64 rows on, with guided or fixed takes (runs 106-108);
    once the chunks fold their sums into the row's words, 128 were faster than 64 up to 16 rows (run
    177: the long nucleus 1 in 16 46.5 / 52.4 against 48.3 / 54.3 µs at 1 / 16 rows): hence 128 and 16
    by default, one per take (on an H100, 64 from 2 to 16 rows: _chunks). Scratch for those passes,
    allocated once per batch size in launches that may need them: 16 KiB per chunk and row where a pass
    has more than 8 chunks (2 MiB per row at 128 chunks, 256 KiB at 16: 32 MiB for 128 rows), 2 KiB per
    chunk and row plus 16 KiB per program with 8 or fewer (shared_sets.hist_words); with long_fill up
    to 68 MiB (68 rows of 64 chunks, on an H100). long_fill's plans are launch variants of their own
    (64 / 32 / 16 chunks with helpers for 17-68 / 69-100 / 101-116 rows on an H100), which `warmup`
    compiles with the rest.
    """

    def __init__(self, vocab_size: int, max_slots: int, device="cuda", *, bound: int = 128,
                 max_bias: int = 64, block: int | None = None, warps: tuple[int, int] | None = None,
                 allow_bounded_approximation: bool = False, emit: int | None = None,
                 strategy: str | None = None, regs: tuple[int, int] | None = None,
                 long_block: int | None = None, long_chunks: int = LONG_CHUNKS, long_chunks_small: int | None = None,
                 long_claim: int = 1, long_fill: bool = True):
        if bound < 2 or bound > 128 or bound & (bound - 1):
            raise ValueError(f"bound must be a power of two in 2..128, got {bound}")
        self.table = SlotTable(vocab_size, max_slots, device, max_bias=max_bias, bound=bound)
        self.vocab_size, self.bound, self.block, self.warps, self.regs = vocab_size, bound, block, warps, regs
        self.exact_untruncated = not allow_bounded_approximation
        if emit is not None and (emit < 2 or emit & (emit - 1)):
            raise ValueError(f"emit must be a power of two >= 2, got {emit}")
        for name, b, least in (("block", block, 2), ("long_block", long_block, 2), ("long_chunks", long_chunks, 1),
                               ("long_chunks_small", long_chunks_small, 1)):
            if b is not None and (b < least or b & (b - 1)):
                raise ValueError(f"{name} must be a power of two, got {b}")
        # A small `block` (the CPU tests') makes the passes walk several sub-tiles; a large one must not
        # push them past LONG_BLOCK, where they spill.
        self.long_block = long_block or min(block or LONG_BLOCK, LONG_BLOCK)
        self.long_chunks = long_chunks
        self.long_chunks_small = long_chunks_small or 8 * long_chunks
        self.fit_chunks = long_chunks_small is None   # the default adapts to the GPU's SMs (_chunks)
        if not isinstance(long_fill, bool):
            raise ValueError(f"long_fill must be a bool, got {long_fill!r}")
        self.long_fill = long_fill
        if not isinstance(long_claim, int) or not 0 <= long_claim <= long_chunks:
            raise ValueError(f"long_claim must be an int in 0..long_chunks ({long_chunks}), got {long_claim!r}")
        self.long_claim = long_claim
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.emit = emit               # keys each stage-1 tile emits (the rest is refilled on demand)
        self.strategy = strategy
        self._scratch = _Scratch()
        self._plans: dict[tuple, dict] = {}
        # Per instance: every argument a launcher's key leaves out is this Sampler's (launch.py).
        self._stage1, self._stage2 = Launcher(sample_stage1), Launcher(sample_stage2)
        self._fill_raw_top = Launcher(raw_top_fill)
        self._verify2 = Launcher(verify_stage2)   # verification's stage 2 (its stage 1 is _stage1's kernel)
        self._full_drafts: dict[tuple, torch.Tensor] = {}   # verification's draft counts of γ, per (B, γ)
        self._verify_plans: dict[tuple, dict] = {}          # verification's part of a plan (verification.py)
        self._summary_key, self._summary = None, (0, False, False, False)
        self._host_summary_key, self._host_summary = None, None
        self._out_checked = None   # the last checked sample(out=...) (outputs.kept_check)
        self._rows_checked = None   # the last checked device slots and positions, and their row count
        self._verify_out_checked = None   # the last checked verify(out=...) (outputs.kept_check)
        # one tensor of each output dtype on the device, whose new_empty allocates sample's outputs
        self._empties = tuple(torch.empty(1, dtype=d, device=self.table.device)
                              for d in (torch.int64, torch.float32, torch.bool))
        # CPU tensors run only under the interpreter (check_logits)
        self._device_ok = self.table.device.type == "cuda" or INTERPRETED

    # -- admission --------------------------------------------------------------------------------
    def add_request(self, slot: int, params: SamplingParams, prompt_token_ids=()) -> SamplingParams:
        """Write a request into a slot (its seed is drawn here if it has none); returns the resolved params.
        Top-n log-probabilities come from the row's `bound` candidates, so n may not exceed the bound.
        The slot's row is written by fills and copies from pinned memory queued on the current CUDA
        stream, without waiting for the GPU: sample on that stream (or order the streams)."""
        n = getattr(params, "logprobs", None)
        if isinstance(params, SamplingParams) and isinstance(n, int) and n > self.bound:
            raise SamplingInputError("logprobs", f"asks for the top {n}; this Sampler's rows have {self.bound} "
                                     f"candidates (Sampler(bound=...) must be at least the largest logprobs)", slot)
        return self.table.assign(slot, params, prompt_token_ids)

    def remove_request(self, slot: int) -> None:
        self.table.release(slot)

    def warmup(self, max_rows: int, dtype: torch.dtype = torch.bfloat16, grammar: bool = False,
               draft_probs: bool = False, logprobs=None) -> int:
        """Compile, before serving, every launch variant that batches of 1..max_rows rows will use
        (`grammar`: with a grammar mask; batches with and without penalties or bias and with sets
        beyond the bound, whatever is admitted). `logprobs`: the top-n widths (SamplingParams.logprobs)
        requests will ask for, default those of the requests admitted so far; a batch's width is its
        rows' largest, so every width and none are prepared, each with and without rows whose raw top-n
        needs the exact raw top-k (and that top-k's own variants). Triton compiles a variant on its first
        launch (up to ~25 s each on an H100, estimated), and the launch table picks configurations per
        row bucket, so without this a new batch size or width can compile mid-serving. The warm-up rows
        point at no slot: no request or count is touched. `draft_probs`: the variants of
        `sample(..., return_draft_probs=True)` instead. The warm-up's logits are contiguous and 16-byte
        aligned: logits whose row stride is not a multiple of 16 elements (a slice of a wider buffer) or
        whose start is not aligned are launch variants of their own (Triton specialises on both) and
        compile on first use. Returns the variant count."""
        tops = self._warm_tops(logprobs)
        variants = {}
        for n in range(1, max_rows + 1):
            # Every kind of batch, whatever the requests admitted so far, since such a request can come
            # later: penalised ones may take their own stage-1 register cap (SampleConfig.regs1_penalised;
            # where the table gives none the two plans are one variant; a grammar mask makes every batch
            # penalised), and batches whose sets may exceed the bound take stage 2's SHARED variant.
            for penalised in ((True,) if grammar else (False, True)):
                for shared in ((False, True) if self.exact_untruncated else (False,)):
                    for n_top, raw in tops:
                        plan = self._plan(n, dtype, grammar, n_top, raw, draft_probs, penalised=penalised,
                                          shared=shared)
                        variants.setdefault(self._warm_key(plan, n, n_top, raw), plan)
        if _WARMUP_LAUNCHES:
            t, dev = self.table, self.table.device
            for plan in variants.values():
                n = plan["key"].n
                logits = torch.zeros(n, self.vocab_size, dtype=dtype, device=dev)
                nowhere = torch.full((n,), t.max_slots, dtype=torch.int64, device=dev)   # no slot: invalid rows
                mask = torch.zeros(n, t.words, dtype=torch.int32, device=dev) if grammar else None
                self._launch(plan, logits, nowhere, torch.zeros(n, dtype=torch.int64, device=dev), mask)
            torch.cuda.synchronize(dev)
        return len(variants)

    def warmup_verify(self, max_requests: int, gammas=(1, 2, 3, 4, 5, 6, 7), dtype: torch.dtype = torch.bfloat16,
                      grammar: bool = False, drafts=("one_hot", "dense", "sparse"), logprobs=None) -> int:
        """Compile, before serving, every launch variant that `verify` will use for batches of 1..max_requests
        requests with γ in `gammas` and the draft kinds in `drafts` ("one_hot": draft_probs None, "dense": a
        (B, γ, V) tensor, "sparse": SparseDraftProbs with this Sampler's `bound` entries, as its own draft
        steps give), and the top-n widths `logprobs` (as `warmup`'s; default those of the requests admitted
        so far; `grammar`: with a grammar mask; batches with and without penalties or bias, whatever is
        admitted). One verification per variant runs on zero logits with every request pointing at no
        slot: no request, count or draft is touched. Returns the variant count."""
        kinds = ("one_hot", "dense", "sparse")
        if not set(drafts) <= set(kinds):
            raise ValueError(f"drafts must be among {kinds}, got {drafts!r}")
        tops = self._warm_tops(logprobs)
        reps = {}
        for gamma in gammas:
            if not isinstance(gamma, int) or gamma < 0:
                raise ValueError(f"gammas must be ints >= 0, got {gamma!r}")
            for b in range(1, max_requests + 1):
                for penalised in ((True,) if grammar else (False, True)):
                    for n_top, raw in tops:
                        n = b * (gamma + 1)
                        plan = self._plan(n, dtype, grammar, n_top, raw, penalised=penalised, verify=True)
                        for kind in drafts:
                            # γ is a launch argument Triton specialises on (1, multiples of 16) too
                            reps.setdefault((self._warm_key(plan, n, n_top, raw), gamma, kind),
                                            (b, gamma, kind, penalised, n_top, raw))
        # verification's per-request arrival counters start at zero: sized for every batch now, so that
        # no capture has to make them (topk._Scratch refuses that)
        self._scratch.get("verify_arrived", max_requests, torch.int32, self.table.device, zeroed=True)
        if _WARMUP_LAUNCHES:
            t, dev, v = self.table, self.table.device, self.vocab_size
            for b, gamma, kind, penalised, n_top, raw in reps.values():
                n = b * (gamma + 1)
                q = None
                if kind == "dense":
                    q = torch.zeros(b, gamma, v, dtype=torch.float32, device=dev)
                elif kind == "sparse":
                    q = SparseDraftProbs(torch.zeros(b, gamma, self.bound, dtype=torch.int64, device=dev),
                                         torch.zeros(b, gamma, self.bound, dtype=torch.float32, device=dev))
                mask = torch.zeros(n, t.words, dtype=torch.int32, device=dev) if grammar else None
                nowhere = torch.full((b,), t.max_slots, dtype=torch.int64, device=dev)   # no slot: invalid rows
                verification.verify(self, torch.zeros(n, v, dtype=dtype, device=dev),
                                    torch.zeros(b, gamma, dtype=torch.int64, device=dev), nowhere,
                                    torch.zeros(b, dtype=torch.int64, device=dev), draft_probs=q,
                                    grammar_bitmask=mask, _penalised=penalised, _tops=(n_top, raw))
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
        return len(reps)

    def _warm_key(self, plan: dict, n: int, n_top: int, raw: bool) -> tuple:
        """What a warm-up launch of `plan` (n rows, width n_top, raw top-k rows or not) compiles: the
        plan's constexprs, n_top's specialisation (a launch argument Triton specialises on 1 and
        multiples of 16) and the raw top-k's own configuration for n rows."""
        return _variant(plan), int_spec(n_top), _raw_top_variant(self.table.device, self.vocab_size, n, n_top, raw)

    def _warm_tops(self, logprobs) -> list[tuple[int, bool]]:
        """The (top-n width, raw rows needing the exact raw top-k) pairs a warm-up prepares: batches
        without log-probabilities, and for every width in `logprobs` (default: the admitted requests'),
        batches of that width with and without such rows (a width of 0: the sampled token's alone)."""
        if logprobs is None:
            widths = self.table.admitted_widths() - {None}
        else:
            widths = set(logprobs)
            bad = [w for w in widths if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w <= self.bound]
            if bad:
                raise ValueError(f"logprobs must be ints in 0..{self.bound} (this Sampler's bound), got {bad[0]!r}")
        return sorted({(0, False)} | {(w, raw) for w in widths for raw in (False, True)})

    # -- one step ---------------------------------------------------------------------------------
    @staticmethod
    def on_host(values) -> bool:
        """Whether per-row values came from the host (a list or a CPU tensor: checked before launch)
        rather than as a device tensor (the CUDA-graph path: used unchecked)."""
        return not (torch.is_tensor(values) and values.device.type != "cpu")

    def _rows(self, name, values, n, check, per: str = "logits row"):
        """A (n,) int64 tensor on the device from a host list / CPU tensor (each value checked) or a
        device tensor (used as it is, unchecked: the CUDA-graph path), and the host values (or None)."""
        dev = self.table.device
        if not self.on_host(values):
            # The kernels read n int64 values at its address: another dtype, a stride or a broadcast
            # (expanded) tensor would be read as other values, so they are refused (no sync needed).
            if (values.shape != (n,) or values.device != dev or values.dtype != torch.int64
                    or (n > 1 and values.stride(0) != 1)):
                raise SamplingInputError(name, f"must be a contiguous int64 ({n},) tensor on {dev}, got "
                                         f"{values.dtype} {tuple(values.shape)} with stride {tuple(values.stride())} "
                                         f"on {values.device}")
            return values, None
        host = self._host_rows(name, values, n, check, per)
        return torch.tensor(host, dtype=torch.int64, device=dev), host

    @staticmethod
    def _host_rows(name, values, n, check, per: str = "logits row", all_good=None) -> list:
        """Host per-row values (a list or a CPU tensor) as a list, each value checked: by
        all_good(list), a whole-list test in C-level loops, when given and it passes; else row by row
        with check(i, value), which raises naming the first bad row."""
        # tolist(): a tensor's or numpy array's values as Python ints (a 0-d one gives a scalar)
        host = values.tolist() if hasattr(values, "tolist") else values
        try:
            host = list(host)
        except TypeError:
            raise SamplingInputError(name, f"must be a sequence of {n} integers (one per {per}), got "
                                     f"{type(values).__name__}") from None
        if len(host) != n:
            raise SamplingInputError(name, f"expected {n} values (one per {per}), got {len(host)}")
        if all_good is None or not all_good(host):
            for i, v in enumerate(host):
                check(i, v)
        return host

    def _slots_all_good(self, host: list) -> bool:
        """Whether every slot is an int (not a bool) naming a slot that holds a request (_check_slot)."""
        return set(map(type, host)) <= _INT and self.table.occupied.issuperset(host)

    @staticmethod
    def _positions_all_good(host: list) -> bool:
        """Whether every position is an int (not a bool) in [0, 2**63) (_check_position)."""
        return set(map(type, host)) <= _INT and (not host or (min(host) >= 0 and max(host) < (1 << 63)))

    def _slots_positions(self, slots, positions, n):
        """sample's slots and positions as (n,) int64 device tensors, and the host slots (None when the
        slots came as a device tensor). Host values are checked, then copied to the device together:
        one copy from pageable memory instead of two. Device tensors that the last call's checks passed
        for the same row count are used again unchecked: an engine passes the same buffers every step
        (the launches read their addresses anew each call)."""
        if self._rows_kept(slots, positions, n):
            return slots, positions, None
        if self.on_host(slots) and self.on_host(positions):
            s_host = self._host_rows("slots", slots, n, self._check_slot, all_good=self._slots_all_good)
            p_host = self._host_rows("positions", positions, n, self._check_position,
                                     all_good=self._positions_all_good)
            self._check_distinct(s_host)
            # positions start on a 16-byte boundary, as a tensor of their own would: Triton specialises
            # kernels on pointer alignment, so odd batch sizes would otherwise compile other variants
            n2 = n + (n & 1)
            buf = array("q", s_host)   # checked ints: array's C loop, ~3x faster than torch.tensor(list)
            buf.extend(p_host if n2 == n else [0] + p_host)
            # from pageable memory the copy has read buf when .to returns (as torch.tensor(list) does)
            both = torch.frombuffer(buf, dtype=torch.int64).to(self.table.device) if n else \
                torch.empty(0, dtype=torch.int64, device=self.table.device)
            return both[:n], both[n2:], s_host
        slots_dev, slots_host = self._rows("slots", slots, n, self._check_slot)
        if slots_host is not None:
            self._check_distinct(slots_host)
        pos_dev, _ = self._rows("positions", positions, n, self._check_position)
        self._keep_rows(slots, positions, slots_dev, pos_dev, n)
        return slots_dev, pos_dev, slots_host

    def _rows_kept(self, slots, positions, n: int) -> bool:
        """Whether slots and positions are the device tensors the last checked call (sample's or
        verify's) passed for n rows, still int64 at the same addresses: their checks (dtype, shape,
        layout, device) hold again. A tensor given other memory in place (`.data =`, `set_`) is
        checked again."""
        memo = self._rows_checked
        return (memo is not None and slots is memo[0] and positions is memo[1] and n == memo[2]
                and slots.dtype is torch.int64 and positions.dtype is torch.int64
                and slots.data_ptr() == memo[3] and positions.data_ptr() == memo[4])

    def _keep_rows(self, slots, positions, slots_dev, pos_dev, n: int) -> None:
        """Remember slots and positions once checked, when both were device tensors used as given."""
        if slots_dev is slots and pos_dev is positions:
            self._rows_checked = (slots, positions, n, slots.data_ptr(), positions.data_ptr())

    @staticmethod
    def _check_distinct(slots: list) -> None:
        """One row per slot: two rows of one request in one launch would both count their tokens into
        it and each see the other's, so the tokens would depend on the batch. (Device slots are used
        unchecked, as every device value is: there they must be distinct too.)"""
        if len(set(slots)) != len(slots):
            first: dict[int, int] = {}
            for i, s in enumerate(slots):
                if s in first:
                    raise SamplingInputError("slots", f"slot {s} is also row {first[s]}'s: one row per slot", i)
                first[s] = i

    def _check_slot(self, i, s):
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < self.table.max_slots:
            raise SamplingInputError("slots", f"slot {s!r} is not in 0..{self.table.max_slots - 1}", i)
        if self.table.host[s] is None:
            raise SamplingInputError("slots", f"slot {s} holds no request (add_request first)", i)

    @staticmethod
    def _check_position(i, p):
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < (1 << 63):
            raise SamplingInputError("positions", f"must be an integer in [0, 2**63), got {p!r}", i)

    def sample(self, logits: torch.Tensor, slots, positions, grammar_bitmask: torch.Tensor | None = None, *,
               return_draft_probs: bool = False, out: SampleOutput | None = None) -> SampleOutput:
        """Sample one token for each of N rows: row i is request `slots[i]` generating position
        `positions[i]` (lists or int64 tensors). One row per slot. Host values are checked, then copied
        to the device from pageable memory, which waits for the GPU's queued work; device tensors must
        be contiguous int64 (checked) and their values are used unchecked, without a host sync
        (distinct slots holding requests: a row whose slot holds none yields token -1). Two launches;
        the tokens are counted into their slots' output counts.

        return_draft_probs: also return each row's final distribution as `draft_probs`, (N, 1, C) ids
        and probabilities with a `complete` flag, so that γ such steps joined by
        `SparseDraftProbs.cat` serve as `Sampler.verify`'s sparse draft (a variant of stage 2).

        out: write into these tensors instead of new ones and return `out` itself (an engine's
        persistent buffers: no allocation per step, fixed addresses for CUDA graphs). Each must have
        exactly the shape, dtype and device this call would allocate, contiguous and 16-byte aligned,
        and must not overlap another or the inputs (not checked); a previous call's result with the same
        rows, top-n width and draft option fits."""
        n = self._logits_rows(logits)
        slots_dev, pos_dev, slots_host = self._slots_positions(slots, positions, n)
        if grammar_bitmask is not None:
            self.check_grammar_bitmask(grammar_bitmask, n)

        has_mask = grammar_bitmask is not None
        n_top, raw_rows_processed, penalised, shared = self._batch_summary(slots_host, has_mask)
        plan = self._plan(n, logits.dtype, has_mask, n_top, raw_rows_processed, return_draft_probs,
                          penalised=penalised, shared=shared)
        return self._launch(plan, logits, slots_dev, pos_dev, grammar_bitmask, out)

    def _logits_rows(self, logits, name: str = "logits", layout: str = "") -> int:
        """check_logits on the hot path (rows free): one pass of the cheap tests, and check_logits itself
        (which raises, naming what does not fit) only when one fails. Returns the row count."""
        try:
            shape, stride = logits.shape, logits.stride()
            fits = (len(shape) == 2 and shape[1] == self.vocab_size and stride[1] == 1 and logits.dtype in _SUPPORTED
                    and logits.device == self.table.device and self._device_ok)
        except (AttributeError, TypeError):   # not a tensor
            fits = False
        if not fits:
            self.check_logits(name, logits, layout=layout)
        return shape[0]

    def _launch(self, plan: dict, logits, slots_dev, pos_dev, grammar_bitmask, out=None) -> SampleOutput:
        """sample's outputs and two launches for a plan (checked inputs, device slots and positions)."""
        t, v = self.table, self.vocab_size
        pk = plan["key"]
        n, n_top, raw_rows_processed, return_draft_probs, shared = pk.n, pk.n_top, pk.raw_rows_processed, pk.draft, \
            pk.shared
        dev = t.device
        # One allocation per output (the kernels write every element): each is a single tensor
        # operation, where carving the outputs from three allocations took fourteen (slices and views,
        # each about as costly on the host). Without top-n log-probabilities their two (n, 0) outputs
        # hold nothing and come from the plan. valid and exact are bool; the kernel stores int8 there.
        if out is None:
            # new_empty of a tensor of the dtype and device: no dtype and device arguments to parse
            # (1.5x faster than torch.empty's keywords on the CPU; within noise on the H100, run 122,
            # where the caching allocator's ~2 µs per tensor dominates)
            i64, f32, b8 = self._empties
            tokens, logprob, dropped = i64.new_empty(n), f32.new_empty(n), f32.new_empty(n)
            valid, exact = b8.new_empty(n), b8.new_empty(n)
            if n_top:
                top_ids, top_lp = i64.new_empty((n, n_top)), f32.new_empty((n, n_top))
            else:
                top_ids, top_lp = plan["no_top"]
            draft = None
            if return_draft_probs:   # each row's final distribution on its C candidates (stage 2 writes all)
                c = self.bound
                complete8 = torch.empty((n, 1), dtype=torch.int8, device=dev)   # the kernel writes int8
                draft = SparseDraftProbs(torch.empty((n, 1, c), dtype=torch.int64, device=dev),
                                         torch.empty((n, 1, c), dtype=torch.float32, device=dev),
                                         complete8.view(torch.bool))
            result = SampleOutput(tokens, valid, logprob, top_ids, top_lp, exact, dropped, draft)
            if n == 0:
                return result
            outs = _out_held(result, n_top, return_draft_probs, plan)[1]
        else:
            # checked once for the same buffers (outputs.kept_check): ~3 µs of host time a call
            self._out_checked, outs = kept_check(self._out_checked, (n, n_top, return_draft_probs), out, _out_held,
                                                 (n_top, return_draft_probs, plan), check_out,
                                                 (n, n_top, self.bound if return_draft_probs else 0, dev))
            result = out
            if n == 0:
                return result

        if grammar_bitmask is None:
            mask, mask_stride = t.token_bits, 0   # any int32 pointer: unread
        else:
            mask, mask_stride = grammar_bitmask, grammar_bitmask.stride(0)
        stride = logits.stride(0)
        sc = plan["scratch"]
        # The per-call addresses, read once: both launches take them as ints (launch.Launcher's direct
        # launch). What Triton specialises on among them (16-byte alignment; the strides' int_spec) is
        # the launches' key with the plan; the rest is this Sampler's or the plan's.
        lp, sp, pp, mp = logits.data_ptr(), slots_dev.data_ptr(), pos_dev.data_ptr(), mask.data_ptr()
        key = (plan["key"], lp & 15 == 0, int_spec(stride), sp & 15 == 0, pp & 15 == 0, mp & 15 == 0,
               int_spec(mask_stride))
        # The arguments at _DYNAMIC1 / _DYNAMIC2, in order; the whole tuples are built only when a
        # launcher needs them (launch.Launcher.launch).
        dyn1 = (lp, stride, sp, pp, mp, mask_stride)
        self._stage1.launch(
            (plan["z"] * n,), key, dyn1,
            lambda: (logits, stride, v, slots_dev, t.max_slots, pos_dev, t.flags, *self.prologue_args(grammar_bitmask),
                     t.seed, sc["cand"], sc["compact"], sc["stats"], sc["best"], sc["best_idx"], plan["z"]),
            plan["const1"], _DYNAMIC1)
        self._stage2.launch((n + plan["help"],), key, dyn1 + outs, lambda: self._stage2_args(
            plan, logits, stride, slots_dev, pos_dev, grammar_bitmask, result), plan["const2"], _DYNAMIC2)
        if raw_rows_processed and n_top > 0:
            self._raw_top(logits, slots_dev, result.valid, sc["raw_lse"], n_top, result.top_token_ids,
                          result.top_logprobs)
        return result

    def _stage2_args(self, plan, logits, stride, slots_dev, pos_dev, grammar_bitmask, result) -> tuple:
        """Stage 2's whole argument tuple (launch.Launcher.launch's build). Without draft outputs the
        kernel never touches those pointers: any tensors of their dtypes do. The bool outputs go as the
        int8 views the kernel stores (same addresses)."""
        t, sc, i8 = self.table, plan["scratch"], torch.int8
        n, n_top = plan["key"].n, plan["key"].n_top
        top_ids, top_lp = (result.top_token_ids, result.top_logprobs) if n_top else plan["no_top"]
        d = result.draft_probs
        d_ids, d_probs, d_complete = (d.token_ids, d.probs, d.complete) if d is not None else \
            (result.tokens, result.logprob, result.valid)
        return (logits, stride, self.vocab_size, slots_dev, t.max_slots, pos_dev, t.flags,
                *self.prologue_args(grammar_bitmask), t.top_k, t.top_p, t.log_min_p, t.seed, t.n_logprobs, sc["cand"],
                sc["stats"], sc["best"], sc["best_idx"], sc["refill"], plan["z"], result.tokens, result.valid.view(i8),
                result.logprob, top_ids, top_lp, result.exact.view(i8), result.dropped_mass, sc["raw_lse"], n_top,
                d_ids, d_probs, d_complete.view(i8), sc["board"], sc["ipar"], sc["fpar"], sc["total"], sc["tb"], sc["hist"], n,
                plan["help"], self.long_claim)

    def check_logits(self, name: str, logits, rows: int | None = None, layout: str = "") -> None:
        """Refuse logits the kernels cannot take, before anything is launched: (rows, V) shape (rows
        given or free), dtype, device, a contiguous last dimension, and CPU tensors outside the interpreter."""
        v, dev = self.vocab_size, self.table.device
        if (not torch.is_tensor(logits) or logits.dim() != 2 or logits.shape[1] != v
                or (rows is not None and logits.shape[0] != rows)):
            raise SamplingInputError(name, f"must be a ({'rows' if rows is None else rows}, {v}) tensor{layout}, "
                                     f"got {tuple(getattr(logits, 'shape', ())) or type(logits).__name__}")
        if logits.dtype not in _SUPPORTED:
            raise SamplingInputError(name, f"dtype must be one of {_SUPPORTED}, got {logits.dtype}")
        if logits.device != dev:
            raise SamplingInputError(name, f"is on {logits.device}, the Sampler's state is on {dev}")
        if logits.stride(1) != 1:
            raise SamplingInputError(name, "last dimension must be contiguous (stride 1)")
        if dev.type != "cuda" and not INTERPRETED:
            raise SamplingInputError(name, "CPU tensors need TRITON_INTERPRET=1 set before sonicsampler is imported")

    def check_grammar_bitmask(self, mask, rows: int) -> None:
        t = self.table
        if mask is None:
            return
        if (not torch.is_tensor(mask) or mask.dtype != torch.int32
                or mask.shape != (rows, t.words) or mask.device != t.device):
            raise SamplingInputError("grammar_bitmask", f"must be an int32 ({rows}, {t.words}) tensor on {t.device}, "
                                     f"got {getattr(mask, 'dtype', None)} {tuple(getattr(mask, 'shape', ()))}")
        if mask.stride(1) != 1:
            raise SamplingInputError("grammar_bitmask", "last dimension must be contiguous")

    def mask_args(self, grammar_bitmask) -> tuple:
        """The grammar mask and its row stride as the kernels take them (any int32 pointer when unused)."""
        if grammar_bitmask is None:
            return self.table.token_bits, 0
        return grammar_bitmask, grammar_bitmask.stride(0)

    def prologue_args(self, grammar_bitmask) -> tuple:
        """The prologue's arguments (kernels/prologue.process): grammar mask and its row stride, then
        the slot table's tensors."""
        t = self.table
        return (*self.mask_args(grammar_bitmask), t.token_bits, t.words, t.counts, t.repetition, t.frequency,
                t.presence, t.bias_ids, t.bias_vals, t.bias_count, t.inv_temperature)

    def _batch_summary(self, slots_host, has_mask: bool) -> tuple[int, bool, bool, bool]:
        """(top-n logprobs width, whether a raw-logprobs row needs the exact raw top-n pass, whether the
        batch is penalised: a grammar mask or a row with penalties or bias, whether a row's set may
        exceed the bound: then stage 2's programs share the exact passes), from the host mirror: the
        rows' slots when known, else every admitted request (cached per table version)."""
        t = self.table
        if slots_host is None:
            key = (t.version, has_mask)
            if self._summary_key != key:
                # from the table's running tallies: no walk over the slots (with thousands of slots and
                # a request admitted or retired nearly every step, that walk cost ~0.5 ms)
                kinds = t.kinds
                n_top = max((w or 0 for w in t.admitted_widths()), default=0)
                raw = kinds["raw_reordering"] > 0 or (has_mask and kinds["raw"] > 0)
                penalised = has_mask or kinds["reordering"] > 0
                # Device slots (the CUDA-graph path) always take the shared passes when rows are exact:
                # a graph captured before any request that may exceed the bound was admitted (an
                # engine's start-up capture) must still sample such requests exactly when replayed.
                self._summary_key, self._summary = key, (n_top, raw, penalised, self.exact_untruncated)
            return self._summary
        # Host slots: the last batch's summary is kept (a decode loop repeats its batch).
        key = (t.version, has_mask, tuple(slots_host))
        if self._host_summary_key != key:
            self._host_summary_key, self._host_summary = key, self._summarize(slots_host, has_mask)
        return self._host_summary

    def _summarize(self, rows, has_mask: bool) -> tuple[int, bool, bool, bool]:
        t = self.table
        n_top = max([t.host[s].logprobs or 0 for s in rows if t.host[s] is not None], default=0)
        kinds = [row_kinds(t.host_flags[s]) for s in rows]
        raw_rows_processed = any(k["raw_reordering"] or (has_mask and k["raw"]) for k in kinds)
        penalised = has_mask or any(k["reordering"] for k in kinds)
        shared = self.exact_untruncated and any(t.host_flags[s] & bits.MAY_EXCEED for s in rows)
        return n_top, raw_rows_processed, penalised, shared

    def launch_config(self, rows: int, penalised: bool = False, verify: bool = False) -> SampleConfig:
        """The launch configuration for `rows` rows: the measured table's (tuning/sample_config.py),
        with this Sampler's overrides applied; `penalised` batches and verification's launches (`verify`)
        take the table's stage-1 register caps for them (SampleConfig.stage1_regs)."""
        cfg = sample_config(self.table.device, self.vocab_size, rows)
        return SampleConfig(max(self.block or cfg.block, 4 * self.bound), min(self.emit or cfg.emit, self.bound),
                            *(self.warps or (cfg.warps1, cfg.warps2)), self.strategy or cfg.strategy,
                            *(self.regs or (cfg.stage1_regs(penalised, verify), cfg.regs2)))

    def _chunks(self, n: int, shared: bool, dev) -> int:
        """The chunks of each long-row pass in a launch of n rows: long_chunks_small up to long_chunks rows,
        by default halved on a GPU until every chunk has a program of its own beside the rows' (1 row, or
        long_chunks rows for batches of 2..long_chunks: one compile for all of them). A pass posted
        before the candidates (shared_sets.post_first_pass) runs while the rows' programs merge their
        own, on the helpers alone (_helpers); stage 2 holds one program per SM, so on an H100 (132 SMs)
        16 rows leave 116: 128 chunks ran their last 12 in a second round, 64 do not (run 206: the long
        nucleus 1 in 16 at 16 rows 30.4 against 34.0 µs). Above long_chunks rows long_chunks, unless
        long_fill fills the SMs with helpers (_fill_programs): then as many chunks as they hold."""
        if not shared:
            return self.long_chunks
        if n > self.long_chunks:
            fill = _fill_programs(n, self.long_chunks, self.long_fill, dev)
            if fill == 0:
                return self.long_chunks
            free = fill - n          # the helpers (an explicit long_chunks_small is fitted too)
        elif self.fit_chunks and dev.type == "cuda":
            free = _sm_count(dev) - (1 if n == 1 else self.long_chunks)
        else:
            return self.long_chunks_small
        c = self.long_chunks_small
        while c > self.long_chunks and c > free:
            c //= 2
        return c

    def _helper_programs(self, n: int, chunks: int, shared: bool, dev) -> int:
        """The helper programs of a launch of n rows (the module's _helpers); with long_fill, a batch of
        more than long_chunks rows that _fill_programs fills gets helpers up to its count."""
        if shared and n > self.long_chunks:
            fill = _fill_programs(n, self.long_chunks, self.long_fill, dev)
            if fill > n:
                return fill - n
        return _helpers(n, chunks, shared, dev)

    def _plan(self, n: int, dtype, has_mask: bool, n_top: int, raw_rows_processed: bool, draft: bool = False, *,
              penalised: bool = False, shared: bool = False, verify: bool = False) -> dict:
        """Everything about the two launches that depends on shapes and options only, computed once per
        combination so that a step's host work is the launches themselves. shared: a row's set may
        exceed the bound; stage 2's SHARED variant then runs the exact passes, shared by its programs.
        verify: the plan of verification's launches (its own stage-1 register cap, launch_config)."""
        shared = shared and self.exact_untruncated   # the bounded approximation has no passes to share
        key = PlanKey(n, dtype, has_mask, n_top, raw_rows_processed, draft, penalised, shared, verify)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        t, v, dev = self.table, self.vocab_size, self.table.device
        c = self.bound
        cfg = self.launch_config(n, penalised, verify)
        block, e, warps = cfg.block, cfg.emit, (cfg.warps1, cfg.warps2)
        m = 4 * e
        z = -(-v // block)
        key64 = dtype == torch.float32
        key_dtype = torch.uint64 if key64 else torch.uint32
        # Chunks per long-row pass (only the SHARED variant has passes: the others keep one constexpr, so
        # that the chunk count makes no compile variant of theirs).
        chunks = self._chunks(n, shared, dev)
        helpers = self._helper_programs(n, chunks, shared, dev)
        sc = self._scratch
        scratch = {"cand": sc.get("cand", n * z * e, torch.uint64, dev),
                   "compact": sc.get("compact", n * z * m, key_dtype, dev),
                   "refill": sc.get("refill", n * 4 * c, key_dtype, dev),
                   "stats": sc.get("stats", n * z * 5, torch.float32, dev),
                   "raw_lse": sc.get("raw_lse", n, torch.float32, dev),
                   "best": sc.get("best", n * z, torch.float32, dev),
                   "best_idx": sc.get("best_idx", n * z, torch.int64, dev),
                   # kernels/shared_sets.py: each row's board (zero when new), pass parameters, the chunks'
                   # partial results (a search pass's integer sums in "hist": shared_sets.chunk_words per chunk,
                   # then each program's copies where the launch takes them, shared_sets.hist_words;
                   # verification's passes take DIGITS words per row, at row * DIGITS), what the
                   # chunks fold them into per row ("total": a pass's sums, the draw's best and mass), and
                   # the weight tied at each cut's key before each chunk.
                   "board": sc.get("board", n * shared_sets.BOARD_W.value, torch.int32, dev, zeroed=True),
                   "ipar": sc.get("ipar", n * shared_sets.PARAMS_W.value, torch.int64, dev),
                   "fpar": sc.get("fpar", n * shared_sets.PARAMS_W.value, torch.float32, dev),
                   "total": sc.get("total", n * shared_sets.TOTAL_W.value, torch.int64, dev, zeroed=True),
                   "tb": sc.get("tb", n * 2 * chunks, torch.int64, dev),
                   "hist": sc.get("hist", shared_sets.hist_words(n, n + helpers, chunks), torch.int64, dev)}
        is_bf16 = dtype == torch.bfloat16
        const1 = dict(BLOCK_LOG2=_log2(block), E_LOG2=_log2(e), M_LOG2=_log2(m), KEY64=key64, IS_BF16=is_bf16,
                      HAS_MASK=has_mask, MAX_BIAS=t.max_bias, EXACT_UNTRUNCATED=self.exact_untruncated,
                      STRATEGY=cfg.strategy, num_warps=warps[0], **_reg_cap(cfg.regs1))
        # Programmatic dependent launch for small batches (pdl.py): stage 1 lets stage 2 start early.
        pdl = stage2_options(dev, n, "sampler")
        const1["PDL"] = pdl["PDL"]
        # Untruncated rows without top-n log-probabilities and greedy rows that need only their argmax skip
        # the candidates (sample.without_candidates), unless the launch returns draft distributions (which
        # need them).
        const1["SKIP_UNTRUNCATED"] = self.exact_untruncated and not draft
        # Rows whose processing is at most a temperature rank their raw values (sample.raw_ordered): 16-bit
        # logits, no grammar mask, and not the rank strategy (the 1-row configuration, whose stage 1 took
        # 5.4 -> 5.9 us with it, run 129g; at 32 / 128 rows stage 1 gains 0.8 / 2.5 us).
        const1["RAW_KEYS"] = not key64 and not has_mask and cfg.strategy != "rank"
        # The constexprs of sample.row_distribution, which the sampler's and verification's stage 2 share.
        rows2 = dict(Z_LOG2=max(_log2(_pow2_at_least(z)), _log2(c) - _log2(e)), E_LOG2=_log2(e), C_LOG2=_log2(c),
                     BLOCK_LOG2=_log2(block), LONG_LOG2=_log2(self.long_block), KEY64=key64, IS_BF16=is_bf16,
                     HAS_MASK=has_mask,
                     MAX_BIAS=t.max_bias, NEG_INF_KEY=_NEG_INF_KEY[dtype],
                     EXACT_UNTRUNCATED=self.exact_untruncated, RAW_KEYS=const1["RAW_KEYS"],
                     # the refill out of line except where top-n log-probabilities make stage 2 spill
                     # around the call (sample.row_distribution)
                     REFILL_CALL=n_top == 0, num_warps=warps[1],
                     **_reg_cap(cfg.regs2), **pdl)
        const2 = dict(rows2, TOP_PAD=max(1, _pow2_at_least(max(n_top, 1))), TOP_N=n_top > 0,
                      CHUNKS_LOG2=_log2(chunks), ROWS_LOG2=_BOARD_ROWS_LOG2,
                      RAW_TOP_FROM_CANDIDATES=not raw_rows_processed, RETURN_DRAFT=draft,
                      SKIP_UNTRUNCATED=const1["SKIP_UNTRUNCATED"], SHARED=shared)
        const2["HELPERS"] = helpers > 0
        plan = self._plans[key] = {"key": key, "z": z, "scratch": scratch, "const1": const1, "rows2": rows2,
                                   "const2": const2, "help": helpers,
                                   # the (n, 0) top-n outputs of calls without top-n log-probabilities
                                   # (views of a real allocation: a zero-size one may have a null address)
                                   "no_top": (torch.empty(2, dtype=torch.int64, device=dev)[:0].view(n, 0),
                                              torch.empty(4, dtype=torch.float32, device=dev)[:0].view(n, 0))}
        return plan
    def verify(self, target_logits: torch.Tensor, draft_token_ids, slots, positions, *, num_draft_tokens=None,
               draft_probs=None, grammar_bitmask: torch.Tensor | None = None,
               out: VerifyOutput | None = None) -> VerifyOutput:
        """Speculative chain verification of B requests (SEMANTICS.md section 5), in two launches.

        target_logits (B*(γ+1), V), request-major; draft_token_ids (B, γ); slots and positions (B,):
        positions[b] is the position of the token generated at request b's first target row.
        num_draft_tokens (B,): ragged draft counts in 0..γ (None: all γ). draft_probs: None (one-hot
        drafts), a dense (B, γ, V) float32 tensor or SparseDraftProbs. Emitted tokens are counted into
        the slots' output counts. out: write into these tensors and return `out` itself, as
        `sample(out=...)` does (each shaped as this call's result, contiguous, 16-byte aligned). See
        sonicsampler/verification.py.
        """
        return verification.verify(self, target_logits, draft_token_ids, slots, positions,
                                   num_draft_tokens=num_draft_tokens, draft_probs=draft_probs,
                                   grammar_bitmask=grammar_bitmask, out=out)

    def _raw_top(self, logits, slots_dev, valid, raw_lse, n_top, top_ids, top_lp, missing=float("nan")):
        """Raw top-n log-probabilities of rows whose processing reorders tokens: an exact top-n of the
        raw logits, for those rows only (selected on the device: no host read). Rows not `valid` get
        ids -1 and log-probabilities `missing` (NaN: an invalid row; verification pads positions it
        did not emit with -inf) in their asked lanes. Three launches (the top-k's two, then
        kernels/raw_top.py), each through launch.Launcher: no host work beyond the launches."""
        t = self.table
        assert n_top <= MAX_LOGPROBS   # add_request's limit: the fill reads n_top lanes of the top-k
        n = logits.shape[0]
        vals, ids = topk_launched(logits, n_top)
        key = (n, n_top, tensor_spec(vals), tensor_spec(ids), tensor_spec(slots_dev), tensor_spec(valid),
               tensor_spec(raw_lse), tensor_spec(top_ids), tensor_spec(top_lp),
               "nan" if math.isnan(missing) else missing)   # every NaN one key (NaN != NaN)
        self._fill_raw_top((n,), key, (vals, ids, slots_dev, t.flags, t.n_logprobs, t.max_slots, valid, raw_lse,
                                       top_ids, top_lp, n_top, missing),
                           {"TOP_PAD": _pow2_at_least(n_top), "num_warps": 1}, _DYNAMIC_RAW_TOP)


def _helpers(n: int, chunks: int, shared: bool, dev) -> int:
    """Programs past a launch's n rows that only help with long rows' passes (kernels/shared_sets.py), so
    that a pass's chunks can run at once when the batch has fewer rows than chunks. Enough for every chunk
    on its own where the GPU holds them all at once (stage 2 runs one program per SM): a pass posted
    before the candidates (shared_sets.post_first_pass) runs while the rows' programs are busy with
    their own, and with chunks - n helpers its last n chunks waited for a second round (run 205: at 1
    row the pass's last chunk started at 15 µs, the others at ~7). Under the interpreter, chunks - n."""
    if not shared or n >= chunks:
        return 0
    if dev.type != "cuda":
        return chunks - n
    return max(chunks - n, min(chunks, _sm_count(dev) - n))


def _fill_programs(n: int, long_chunks: int, fill: bool, dev) -> int:
    """With long_fill, the programs a shared launch of n > long_chunks rows runs: one per SM where the
    rows leave at least long_chunks SMs free (then the passes take as many chunks as the helpers and
    rows can run at once: Sampler._chunks), else 0 (long_chunks chunks and no helpers, the default above
    long_chunks rows). Without it, a launch of 32 rows with two long rows ran their 32 chunks of ~9 sub-tiles on the
    rows' 32 programs while ~100 SMs held nothing (run 227: 1.98x the all-bounded batch, against 1.37x at
    16 rows; 1.57x with it, run 233). Under the interpreter `_sm_count_or_none` gives no count: 0."""
    if not fill:
        return 0
    sms = _sm_count_or_none(dev)
    if sms is None or sms - n < long_chunks:
        return 0
    return sms


def _sm_count_or_none(dev):
    """The GPU's SM count, None off a GPU (tests replace this to plan for a GPU on the CPU)."""
    return _sm_count(dev) if dev.type == "cuda" else None


_SMS: dict = {}


def _sm_count(dev) -> int:
    if dev not in _SMS:
        _SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _SMS[dev]


def _out_held(out: SampleOutput, n_top: int, draft: bool, plan: dict) -> tuple[tuple, tuple]:
    """(the tensors `out` holds, the addresses stage 2 writes at: tokens, valid, logprob, top-n ids and
    log-probabilities (the plan's (n, 0) ones without a width), exact, dropped mass, n_top, then the
    draft's ids, probabilities and `complete`, or the tokens', log-probabilities' and validity's when
    no draft is asked); an AttributeError where a field is not a tensor."""
    d = out.draft_probs
    held = (out.tokens, out.valid, out.logprob, out.top_token_ids, out.top_logprobs, out.exact, out.dropped_mass, d)
    top_ids, top_lp = (out.top_token_ids, out.top_logprobs) if n_top else plan["no_top"]
    tokens, valid, logprob = out.tokens.data_ptr(), out.valid.data_ptr(), out.logprob.data_ptr()
    if draft:
        held += (d.token_ids, d.probs, d.complete)
        drafted = addresses((d.token_ids, d.probs, d.complete))
    else:
        drafted = (tokens, logprob, valid)
    return held, (tokens, valid, logprob, top_ids.data_ptr(), top_lp.data_ptr(), out.exact.data_ptr(),
                  out.dropped_mass.data_ptr(), n_top, *drafted)


def _raw_top_variant(device, vocab: int, n: int, n_top: int, raw: bool) -> tuple:
    """What the raw top-k of a batch (Sampler._raw_top: n rows, k = n_top) compiles for: its
    configuration for n rows and k's specialisation (none when the batch takes no raw top-k)."""
    if not (raw and n_top > 0):
        return ()
    return topk_config(device, vocab, n), int_spec(n_top), stage2_options(device, n, "topk")["PDL"]


class PlanKey(NamedTuple):
    """What a launch plan (Sampler._plan) is computed for: one plan per distinct key."""
    n: int                      # rows
    dtype: torch.dtype          # the logits'
    has_mask: bool              # a grammar bitmask
    n_top: int                  # top-n log-probabilities' width
    raw_rows_processed: bool    # the launcher's raw top-k serves rows with penalties, bias or a mask
    draft: bool                 # draft distributions returned
    penalised: bool             # stage 1's cap for penalised batches
    shared: bool                # stage 2's SHARED variant (rows beyond the bound share their passes)
    verify: bool                # verification's launches (their own stage-1 cap)


def _variant(plan: dict) -> tuple:
    """What a compiled kernel pair is specialised on, of a plan: its constexprs and launch options."""
    return tuple(sorted(plan["const1"].items())), tuple(sorted(plan["const2"].items()))


def sample(logits: torch.Tensor, params, *, positions, prompt_token_ids=None, output_token_ids=None,
           grammar_bitmask=None, bound: int = 128, block: int | None = None,
           allow_bounded_approximation: bool = False, emit: int | None = None,
           strategy: str | None = None) -> SampleOutput:
    """One-off functional form with the reference's signature: a temporary Sampler, one slot per row.
    prompt_token_ids / output_token_ids: one sequence of token ids per row (or None)."""
    if not torch.is_tensor(logits) or logits.dim() != 2:
        raise SamplingInputError("logits", f"must be a 2-D tensor (rows, vocab), got "
                                 f"{tuple(getattr(logits, 'shape', ())) or type(logits).__name__}")
    n, v = logits.shape
    plist = [params] * n if isinstance(params, SamplingParams) else list(params)
    if len(plist) != n:
        raise SamplingInputError("params", f"expected one SamplingParams or {n} of them, got {len(plist)}")
    per_row = {}
    for name, given in (("prompt_token_ids", prompt_token_ids), ("output_token_ids", output_token_ids)):
        rows = [()] * n if given is None else list(given)
        if len(rows) != n:
            raise SamplingInputError(name, f"expected one sequence of token ids per row ({n}), got {len(rows)}")
        per_row[name] = rows
    bad = next((i for i, p in enumerate(plist) if not isinstance(p, SamplingParams)), None)
    if bad is not None:
        raise SamplingInputError("params", f"must be a SamplingParams, got {type(plist[bad]).__name__}", bad)
    max_bias = max([len(p.logit_bias or {}) for p in plist] + [1])
    s = Sampler(v, max(n, 1), logits.device, bound=bound, max_bias=max_bias, block=block,
                allow_bounded_approximation=allow_bounded_approximation, emit=emit, strategy=strategy)
    for i, p in enumerate(plist):
        s.add_request(i, p, per_row["prompt_token_ids"][i])
        out = s.table._token_ids("output_token_ids", per_row["output_token_ids"][i], i)
        if out:
            s.table.set_output(i, out)
    return s.sample(logits, list(range(n)), positions, grammar_bitmask)


# The launch arguments of `sample` that can change between calls of one plan (Launcher): logits, its
# row stride, slots, positions, the grammar mask and its stride; in stage 2 also the outputs and the
# draft outputs. The slot table's tensors and the plan's scratch keep their addresses.
_DYNAMIC1 = (0, 1, 3, 5, 7, 8)
_DYNAMIC2 = _DYNAMIC1 + tuple(range(30, 37)) + (38, 39, 40, 41)
_DYNAMIC_RAW_TOP = (0, 1, 2, 6, 7, 8, 9)   # raw_top_fill's per-call tensors
_INT = {int}   # the type of valid slots and positions (not bool, not numpy's)


def _reg_cap(regs: int) -> dict:
    """The launch option capping a stage's registers per thread (none for 0)."""
    return {"maxnreg": regs} if regs else {}
