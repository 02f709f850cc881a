"""SamplingParams host validation (SEMANTICS.md section 6, params.py docstring).

Every field has a strategy of valid values and one of invalid values; both straddle each boundary of
the field's domain (the boundary itself and its nearest float neighbour on either side). Invalid
values are drawn as (value, culprit) pairs: `culprit` is what the error message must quote (the value
itself, or for logit_bias the offending token id or bias).
"""
from __future__ import annotations

import math
import sys
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sonicsampler.errors import InvalidParameterError
from sonicsampler.params import LOGPROBS_MODES, MAX_ABS_BIAS, MAX_LOGPROBS, MAX_SCALE, MIN_SCALE, SamplingParams

INF, NAN = math.inf, math.nan
MAX_FLOAT = sys.float_info.max
HUGE_INT = 10**400                  # an integer no float can hold
U64 = 1 << 64


def below(x: float) -> float:
    return math.nextafter(x, -INF)


def above(x: float) -> float:
    return math.nextafter(x, INF)


# -- strategy building blocks ---------------------------------------------------------------------
NOT_NUMBERS = st.one_of(st.none(), st.booleans(), st.text(max_size=8), st.just(b"1"), st.just([1.0]))
NON_INTS = st.one_of(NOT_NUMBERS, st.floats(), st.fractions())


def reals(lo: float, hi: float = MAX_FLOAT, *, exclude_lo: bool = False) -> st.SearchStrategy:
    """Valid real numbers in [lo, hi] (or (lo, hi]) as floats, ints, fractions and numpy floats,
    boundaries and their inner neighbours always in play."""
    edges = [x for x in (lo, above(lo), below(hi), hi) if math.isfinite(x) and not (exclude_lo and x == lo)]
    ints = st.integers(math.ceil(lo) + (exclude_lo and lo == math.ceil(lo)), min(math.floor(hi), 2**70))
    floats = st.floats(lo, hi, exclude_min=exclude_lo, allow_nan=False, allow_infinity=False)
    return st.one_of(st.sampled_from(edges), floats, floats.map(np.float64), ints,
                     st.fractions(Fraction(lo), Fraction(min(hi, 2**70))).filter(lambda f: not exclude_lo or f > lo))


def ints(lo: int, hi: int | None = None) -> st.SearchStrategy:
    """Valid integers in [lo, hi] (hi None = unbounded) as Python and numpy ints, edges included."""
    edges = [lo, lo + 1] + ([hi - 1, hi] if hi is not None else [])
    py = st.integers(lo, hi)
    fits_int64 = lo >= -(2**63) and hi is not None and hi < 2**63
    return st.one_of(st.sampled_from(edges), py, py.map(np.int64) if fits_int64 else py)


def outside(lo: float, hi: float | None, *, lo_ok: bool = True) -> st.SearchStrategy:
    """Real numbers just outside [lo, hi] (or (lo, hi] when lo_ok=False; hi None = any finite value),
    plus NaN, the infinities and integers too large for a float."""
    first_bad_low = below(lo) if lo_ok else lo
    low = [st.floats(max_value=first_bad_low), st.floats(max_value=first_bad_low, allow_nan=False).map(np.float64),
           st.integers(max_value=math.ceil(lo) - (1 if lo_ok else 0))]
    high = [] if hi is None else [st.just(above(hi)), st.floats(min_value=above(hi)),
                                  st.integers(min_value=math.floor(hi) + 1)]
    return st.one_of(st.sampled_from([first_bad_low, NAN, INF, -INF, HUGE_INT, -HUGE_INT, np.float64(NAN)]),
                     *low, *high)


def culprit_is_value(s: st.SearchStrategy) -> st.SearchStrategy:
    return s.map(lambda v: (v, v))


# -- logit_bias ------------------------------------------------------------------------------------
VALID_TOKENS = st.one_of(st.integers(0, 2**40), st.just(0), st.integers(0, 2**40).map(np.int64))
VALID_BIASES = st.one_of(reals(-MAX_ABS_BIAS, MAX_ABS_BIAS), st.just(-INF))
VALID_BIAS_MAPS = st.dictionaries(VALID_TOKENS, VALID_BIASES, max_size=6)
BAD_TOKENS = st.one_of(st.just(-1), st.integers(max_value=-1), st.booleans(), st.floats(), st.text(max_size=4),
                       st.just(np.int64(-1)), st.just(None))
BAD_BIASES = st.one_of(st.sampled_from([NAN, INF, HUGE_INT, -HUGE_INT, np.float64(NAN), np.float64(INF),
                                       above(MAX_ABS_BIAS), below(-MAX_ABS_BIAS), 1e39, -1e300]),
                       st.floats(min_value=above(MAX_ABS_BIAS)), st.floats(max_value=below(-MAX_ABS_BIAS)).filter(
                           lambda b: b != -INF), NOT_NUMBERS)


@st.composite
def bad_bias_maps(draw):
    """(mapping, culprit): a mapping with exactly one bad entry among valid ones, or not a mapping."""
    kind = draw(st.sampled_from(["token", "bias", "not a mapping"]))
    if kind == "not a mapping":
        v = draw(st.one_of(st.lists(st.tuples(VALID_TOKENS, VALID_BIASES), min_size=1, max_size=3),
                           st.integers(), st.text(max_size=4), st.floats(), st.just({1, 2})))
        return v, v
    tok = draw(BAD_TOKENS) if kind == "token" else draw(VALID_TOKENS)
    bias = draw(VALID_BIASES) if kind == "token" else draw(BAD_BIASES)
    d = {tok: bias}                  # the bad entry first, so validation meets it whatever the rest holds
    for k, v in draw(VALID_BIAS_MAPS).items():
        if k not in d:               # True == 1, 2.0 == 2: never let a valid key overwrite the bad one
            d[k] = v
    return d, tok if kind == "token" else bias


# Positive scales outside [MIN_SCALE, MAX_SCALE] (temperature, repetition penalty): float32 would hold
# them or their reciprocal as 0 or inf
BEYOND_SCALES = st.one_of(st.sampled_from([below(MIN_SCALE), above(MAX_SCALE), 1e-50, 1e-39, 1e39, 1e300,
                                           Fraction(1, 10**40), 2 * 10**30]),
                          st.floats(min_value=above(0.0), max_value=below(MIN_SCALE)),
                          st.floats(min_value=above(MAX_SCALE), allow_infinity=False),
                          st.integers(min_value=2 * 10**30, max_value=10**300))


# -- the domain of every field ---------------------------------------------------------------------
VALID = {
    "temperature": st.one_of(reals(MIN_SCALE, MAX_SCALE), st.sampled_from([0, 0.0, -0.0])),
    "top_k": st.one_of(ints(0, 2**31), st.integers(min_value=0)),
    "top_p": reals(0, 1, exclude_lo=True),
    "min_p": reals(0, 1),
    "repetition_penalty": reals(MIN_SCALE, MAX_SCALE),
    "frequency_penalty": reals(-2, 2),
    "presence_penalty": reals(-2, 2),
    "logit_bias": st.one_of(st.none(), VALID_BIAS_MAPS),
    "seed": st.one_of(st.none(), ints(-(2**63), U64 - 1), st.integers(-(2**63), 2**63 - 1).map(np.int64),
                      st.integers(0, U64 - 1).map(np.uint64)),
    "logprobs": st.one_of(st.none(), ints(0, MAX_LOGPROBS)),
    "logprobs_mode": st.sampled_from(LOGPROBS_MODES),
}

INVALID = {
    "temperature": culprit_is_value(st.one_of(outside(0, None), NOT_NUMBERS, BEYOND_SCALES)),
    "top_k": culprit_is_value(st.one_of(st.just(-1), st.integers(max_value=-1), st.just(np.int64(-1)), NON_INTS)),
    "top_p": culprit_is_value(st.one_of(outside(0, 1, lo_ok=False), st.just(-0.0), NOT_NUMBERS)),
    "min_p": culprit_is_value(st.one_of(outside(0, 1), NOT_NUMBERS)),
    "repetition_penalty": culprit_is_value(st.one_of(outside(0, None, lo_ok=False), st.just(-0.0), NOT_NUMBERS,
                                                     BEYOND_SCALES)),
    "frequency_penalty": culprit_is_value(st.one_of(outside(-2, 2), NOT_NUMBERS)),
    "presence_penalty": culprit_is_value(st.one_of(outside(-2, 2), NOT_NUMBERS)),
    "logit_bias": bad_bias_maps(),
    "seed": culprit_is_value(st.one_of(
        st.sampled_from([-(2**63) - 1, U64, HUGE_INT]), st.integers(max_value=-(2**63) - 1),
        st.integers(min_value=U64), NON_INTS.filter(lambda v: v is not None))),
    "logprobs": culprit_is_value(st.one_of(
        st.sampled_from([-1, MAX_LOGPROBS + 1]), st.integers(max_value=-1), st.integers(min_value=MAX_LOGPROBS + 1),
        NON_INTS.filter(lambda v: v is not None))),
    "logprobs_mode": culprit_is_value(st.one_of(
        st.sampled_from(["RAW", "Processed", " raw", "processed ", "", "logits", b"raw", None, 0]),
        st.text(max_size=12).filter(lambda s: s not in LOGPROBS_MODES))),
}

FIELDS = sorted(VALID)
REQUESTS = st.one_of(st.integers(0, 10**6), st.text("abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12))


def test_every_field_is_covered():
    assert set(VALID) == set(INVALID) == set(SamplingParams.__dataclass_fields__)


def with_field(name: str, value) -> SamplingParams:
    """Default params with one field forced to `value`, bypassing the constructor's validation."""
    p = SamplingParams()
    object.__setattr__(p, name, value)
    return p


# -- valid values are accepted unchanged -----------------------------------------------------------
@pytest.mark.parametrize("name", FIELDS)
@given(data=st.data(), req=REQUESTS)
def test_valid_value_accepted(name, data, req):
    value = data.draw(VALID[name], label=name)
    p = SamplingParams(**{name: value})
    if name in ("top_k", "seed", "logprobs") and value is not None:   # integers of any type, kept as int
        assert type(getattr(p, name)) is int and getattr(p, name) == value
    else:
        assert getattr(p, name) is value
    assert p.validate(request=req) is p
    assert p.validate(vocab_size=2**41, request=req) is p   # above every generated token id


def test_defaults_are_valid():
    assert SamplingParams().validate(vocab_size=1) == SamplingParams()


# -- invalid values are refused, naming the field, the value and the request -----------------------
def check_error(err: InvalidParameterError, name: str, culprit, request=None):
    msg = str(err)
    assert err.field == name
    assert name in msg
    assert repr(culprit) in msg
    assert err.request == request
    if request is not None:
        assert f"request {request}" in msg


@pytest.mark.parametrize("name", FIELDS)
@given(data=st.data(), req=REQUESTS)
def test_invalid_value_refused(name, data, req):
    value, culprit = data.draw(INVALID[name], label=name)
    with pytest.raises(InvalidParameterError) as e:
        SamplingParams(**{name: value})
    check_error(e.value, name, culprit)
    with pytest.raises(InvalidParameterError) as e:
        with_field(name, value).validate(vocab_size=2**41, request=req)
    check_error(e.value, name, culprit, req)


# -- logit_bias token ids against the vocabulary ---------------------------------------------------
@given(vocab_size=st.integers(1, 2**20), gap=st.integers(0, 2**20), bias=VALID_BIASES, req=REQUESTS)
def test_logit_bias_token_checked_against_vocab_only_when_given(vocab_size, gap, bias, req):
    inside = SamplingParams(logit_bias={max(vocab_size - 1 - gap, 0): bias})
    assert inside.validate(vocab_size=vocab_size, request=req) is inside

    tok = vocab_size + gap                       # >= vocab_size: fine until the vocabulary is known
    p = SamplingParams(logit_bias={tok: bias})
    assert p.validate(request=req) is p
    with pytest.raises(InvalidParameterError) as e:
        p.validate(vocab_size=vocab_size, request=req)
    check_error(e.value, "logit_bias", tok, req)
    assert str(vocab_size) in str(e.value)


# -- seeds -----------------------------------------------------------------------------------------
@given(seed=VALID["seed"].filter(lambda s: s is not None))
def test_seed_u64_is_seed_mod_2_64(seed):
    p = SamplingParams(seed=seed)
    assert type(p.seed_u64) is int
    assert p.seed_u64 == int(seed) % U64
    assert 0 <= p.seed_u64 < U64
    if int(seed) < 0:                            # s and s + 2**64 name the same Philox key
        assert SamplingParams(seed=int(seed) + U64).seed_u64 == p.seed_u64


@given(seed=VALID["seed"].filter(lambda s: s is not None), other=VALID["temperature"])
def test_resolved_keeps_a_given_seed(seed, other):
    p = SamplingParams(seed=seed, temperature=other)
    r = p.resolved()
    assert r.seed == seed and type(r.seed) is int and r == p


@settings(max_examples=20)
@given(fields=st.fixed_dictionaries({}, optional={n: VALID[n] for n in FIELDS if n != "seed"}))
def test_resolved_draws_a_seed_when_none(fields):
    p = SamplingParams(**fields)
    with pytest.raises(InvalidParameterError) as e:
        p.seed_u64
    assert e.value.field == "seed"

    r1, r2 = p.resolved(), p.resolved()
    assert p.seed is None                        # the original is untouched
    for r in (r1, r2):
        assert type(r.seed) is int and 0 <= r.seed < U64
        assert r.seed_u64 == r.seed
        assert replace(r, seed=None) == p
        assert r.resolved() is r                 # resolving is done once
    assert r1.seed != r2.seed                    # two 64-bit draws collide with probability 2**-64
