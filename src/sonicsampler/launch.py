"""Launch a @triton.jit kernel without Triton's per-call argument binding, once it is compiled.

Triton's JITFunction binds and specialises every argument on every launch, then builds a cache key
string. For the sampler's kernels (about 50 arguments each) that cost about 90 us of host time per
launch, measured on an H100 (benchmarks/results/h100/run6_sample_mix.csv, host breakdown), against a
25 us budget for a whole step. The compiled kernel launches directly in a few microseconds.

The caller names everything Triton specialises on that can differ between its calls (`key`: pointer
alignment and dtypes of per-call tensors, divisibility of per-call integers, the constexprs); all
other arguments must be fixed for a given key. Under the interpreter every call goes through Triton.
"""
from __future__ import annotations

import inspect
import os

import torch
from triton import knobs

from .kernels import INTERPRETED


def tensor_spec(t: torch.Tensor) -> tuple:
    """What Triton specialises on for a tensor argument: its dtype and 16-byte alignment."""
    return t.dtype, t.data_ptr() % 16 == 0


def int_spec(i: int) -> tuple:
    """What Triton specialises on for an integer argument: 1, divisibility by 16, and its width."""
    return i == 1, i % 16 == 0, -2**31 <= i < 2**31


def _address(a):
    return a.data_ptr() if isinstance(a, torch.Tensor) else a


# SONICSAMPLER_BARE_LAUNCH=0 sends every launch through Triton's runner (for A/B timings of host time).
BARE = os.environ.get("SONICSAMPLER_BARE_LAUNCH", "1") != "0"


def bare_launch(compiled):
    """The compiled kernel's C launch and what it takes before the kernel's arguments, or None where
    Triton's runner has work to do on a launch (global or profile scratch to allocate).

    Triton's runner looks up the current device and stream, builds launch metadata for hooks and goes
    through CudaLauncher.__call__ on every launch (run 63, benchmarks/profile_host.py: about half of
    an eager sampler call's 125 us was in its two launches). Calling the C launch directly skips all
    but the stream lookup: 110-146 -> 66-92 us per call on the H100 (run 64)."""
    if not BARE:
        return None
    try:
        run = compiled.run
        if run.global_scratch_size or run.profile_scratch_size:
            return None
        return run.launch, compiled.function, run.launch_cooperative_grid, run.launch_pdl, compiled.packed_metadata
    except AttributeError:
        # Not a CompiledKernel of the Triton this was written for (3.6), or a stand-in (the sm_90
        # compile test records launches instead of making them): Triton's runner launches it.
        return None


def _hooks_set() -> bool:
    """Whether a launch hook (e.g. a profiler's) is installed: then every launch goes through Triton's
    runner, which calls it."""
    rt = knobs.runtime
    return bool(getattr(rt.launch_enter_hook, "calls", rt.launch_enter_hook)
                or getattr(rt.launch_exit_hook, "calls", rt.launch_exit_hook))


class Launcher:
    def __init__(self, fn):
        self.fn = fn
        self._compiled: dict = {}

    def __call__(self, grid: tuple, key, args: tuple, consts: dict, dynamic: tuple | None = None) -> None:
        """Launch with `args` (the kernel's leading parameters). `dynamic`: the positions of the
        arguments that may change between calls with one key; every other tensor is then passed as
        the address it had at the first call. Triton's launcher calls data_ptr() and the driver's
        cuPointerGetAttribute for each tensor argument, about 40 of them per sampler launch; an int
        skips both. None: every argument as given."""
        hit = self._compiled.get(key)
        if hit is not None:
            compiled, tail, fixed, bare = hit
            if dynamic is not None:
                a = list(fixed)
                for i in dynamic:
                    a[i] = _address(args[i])
                if INTERPRETED:
                    # The CPU tests run every launch through Triton, and check here that no argument
                    # outside `dynamic` changed (a stale address would be a silent wrong launch).
                    now = [_address(x) for x in args]
                    if a != now:
                        bad = [i for i in range(len(a)) if a[i] != now[i]]
                        raise AssertionError(f"{self.fn.fn.__name__}: arguments {bad} changed but are not dynamic")
            if not INTERPRETED:
                self._go(grid, compiled, tail, a if dynamic is not None else args, bare)
                return
        compiled = self.fn[grid](*args, **consts)
        if hit is None:
            # The tail is built under the interpreter too (which always launches through Triton), so
            # that the CPU tests exercise it.
            self._compiled[key] = (compiled, self.tail(len(args), consts), [_address(x) for x in args],
                                   None if INTERPRETED else bare_launch(compiled))

    def launch(self, grid: tuple, key, dyn: tuple, build, consts: dict, dynamic: tuple) -> None:
        """As __call__ with `dynamic`, given only what changes between calls of one key: `dyn`, the
        values at the `dynamic` positions, in order. build() returns the whole argument tuple; it runs
        on a key's first launch (which compiles and records the fixed addresses) and under the
        interpreter, which checks that `dyn` holds what build() has at those positions. Building the
        sampler's argument tuples (about 30 and 45 values) cost more host time than the launch."""
        hit = self._compiled.get(key)
        if hit is None or INTERPRETED:
            args = build()
            if INTERPRETED and [_address(args[i]) for i in dynamic] != [_address(x) for x in dyn]:
                raise AssertionError(f"{self.fn.fn.__name__}: dyn differs from the arguments at {dynamic}")
            self(grid, key, args, consts, dynamic)
            return
        compiled, tail, fixed, bare = hit
        a = list(fixed)
        for i, x in zip(dynamic, dyn):
            a[i] = x.data_ptr() if isinstance(x, torch.Tensor) else x
        self._go(grid, compiled, tail, a, bare)

    @staticmethod
    def _go(grid: tuple, compiled, tail: tuple, a, bare) -> None:
        """The launch itself (not under the interpreter): bare through the compiled kernel's C launch,
        else through Triton's runner."""
        g = grid + (1,) * (3 - len(grid))       # the compiled kernel takes 3 grid dimensions
        if bare is not None and not _hooks_set():
            launch, function, coop, pdl, packed = bare
            # The current device's current stream, as Triton's runner takes it.
            stream = torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())
            launch(g[0], g[1], g[2], stream, function, coop, pdl, None, None, packed, None, None, None, *a, *tail)
        else:
            compiled[g](*a, *tail)

    def tail(self, n_args: int, consts: dict) -> tuple:
        """The parameters after the first n_args, as the compiled kernel takes them: every parameter
        positionally, constexprs included, in the kernel's order, defaulted ones at their defaults;
        launch options (num_warps) are not parameters."""
        params = inspect.signature(self.fn.fn).parameters
        out = []
        for name in self.fn.arg_names[n_args:]:
            if name in consts:
                out.append(consts[name])
            elif params[name].default is not inspect.Parameter.empty:
                out.append(params[name].default)
            else:
                raise TypeError(f"{self.fn.fn.__name__}: no value for parameter {name!r}")
        return tuple(out)
