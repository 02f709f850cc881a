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
        # key -> (compiled, tail, fixed addresses, bare launch or None, direct launch or None, grid,
        # dynamic positions or None)
        self._compiled: dict = {}

    def __call__(self, grid: tuple, key, args: tuple, consts: dict, dynamic: tuple | None = None, _dyn=None) -> None:
        """Launch with `args` (the kernel's leading parameters). `dynamic`: the positions of the
        arguments that may change between calls with one key; every other tensor is then passed as
        the address it had at the first call. Triton's launcher calls data_ptr() and the driver's
        cuPointerGetAttribute for each tensor argument, about 40 of them per sampler launch; an int
        skips both. None: every argument as given. (_dyn: launch()'s values at those positions.)"""
        hit = self._compiled.get(key)
        if hit is not None and dynamic is not None:
            if INTERPRETED:
                self._check(hit, grid, args, tuple(args[i] for i in dynamic), dynamic)
            else:
                self._go_dynamic(hit, grid, tuple(args[i] for i in dynamic))
                return
        elif hit is not None and not INTERPRETED:
            self._go(grid, hit[0], hit[1], args, hit[3])
            return
        compiled = self.fn[grid](*args, **consts)
        if hit is None:
            self._record(key, grid, compiled, args, consts, dynamic, _dyn)

    def launch(self, grid: tuple, key, dyn: tuple, build, consts: dict, dynamic: tuple) -> None:
        """As __call__ with `dynamic`, given only what changes between calls of one key: `dyn`, the
        values at the `dynamic` positions, in order. build() returns the whole argument tuple; it runs
        on a key's first launch (which compiles and records the fixed addresses) and under the
        interpreter, which checks that `dyn` holds what build() has at those positions. Building the
        sampler's argument tuples (about 30 and 45 values) cost more host time than the launch."""
        hit = self._compiled.get(key)
        if hit is not None and not INTERPRETED:
            direct = hit[4]
            # the direct launch holds the key's first grid (every caller's key fixes its grid, which
            # _check asserts under the interpreter); another grid goes the general way
            if direct is not None and grid == hit[5] and not _hooks_set():
                direct(*dyn)
            else:
                self._go_dynamic(hit, grid, dyn)
            return
        args = build()
        if INTERPRETED:
            if [_address(args[i]) for i in dynamic] != [_address(x) for x in dyn]:
                raise AssertionError(f"{self.fn.fn.__name__}: dyn differs from the arguments at {dynamic}")
            if hit is not None:
                self._check(hit, grid, args, dyn, dynamic)
                self.fn[grid](*args, **consts)
                return
        self(grid, key, args, consts, dynamic, dyn)

    def _record(self, key, grid: tuple, compiled, args: tuple, consts: dict, dynamic, dyn) -> None:
        """Keep a key's compiled kernel, the parameters after `args` (tail), the addresses of `args` and
        the two ways of launching it again without Triton's runner. Built under the interpreter too
        (which always launches through Triton), so that the CPU tests exercise them (_check). The
        direct launch takes the dynamic values as this first call gave them (`dyn`, else `args` at
        `dynamic`): a tensor where it gave a tensor, an int (an address) where it gave an int."""
        tail = self.tail(len(args), consts)
        fixed = [_address(x) for x in args]
        bare = None if INTERPRETED else bare_launch(compiled)
        direct = None
        if dynamic is not None and (bare is not None or INTERPRETED):
            given = dyn if dyn is not None else [args[i] for i in dynamic]
            tensors = tuple(isinstance(x, torch.Tensor) for x in given)
            direct = _direct(_Recorder() if INTERPRETED else bare, grid, fixed, tail, dynamic, tensors)
        self._compiled[key] = (compiled, tail, fixed, bare, direct, grid, dynamic)

    def _go_dynamic(self, hit, grid: tuple, dyn: tuple) -> None:
        """A launch of a recorded key given its dynamic values (not under the interpreter)."""
        compiled, tail, fixed, bare, direct, grid0, dynamic = hit
        if direct is not None and grid == grid0 and not _hooks_set():
            direct(*dyn)
            return
        a = list(fixed)
        for i, x in zip(dynamic, dyn):
            a[i] = _address(x)
        self._go(grid, compiled, tail, a, bare)

    def _check(self, hit, grid: tuple, args: tuple, dyn: tuple, dynamic: tuple) -> None:
        """Under the interpreter, before each launch of a recorded key: no argument outside `dynamic`
        changed (a stale address would be a silent wrong launch), the grid is the recorded one, and
        the direct launch, given `dyn`, passes what Triton's runner would: every argument's address,
        then the tail."""
        compiled, tail, fixed, bare, direct, grid0, _dynamic = hit
        name = self.fn.fn.__name__
        a = list(fixed)
        for i in dynamic:
            a[i] = _address(args[i])
        now = [_address(x) for x in args]
        if a != now:
            bad = [i for i in range(len(a)) if a[i] != now[i]]
            raise AssertionError(f"{name}: arguments {bad} changed but are not dynamic")
        if tuple(grid) != tuple(grid0):
            raise AssertionError(f"{name}: grid {grid} differs from the key's first launch ({grid0})")
        direct(*dyn)
        g = grid + (1,) * (3 - len(grid))
        want = (*g, "stream", "function", "coop", "pdl", None, None, "packed", None, None, None, *now, *tail)
        if direct.launched.args != want:
            raise AssertionError(f"{name}: the direct launch passes {direct.launched.args}, not {want}")

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


class _Recorder:
    """A stand-in for a compiled kernel's C launch and its handles (under the interpreter): a launch
    records its arguments, so that Launcher._check can compare them with what Triton's runner takes."""

    def __init__(self):
        self.args = None

    def __call__(self, *args):
        self.args = args

    def __iter__(self):   # unpacked as bare_launch's (launch, function, coop, pdl, packed)
        return iter((self, "function", "coop", "pdl", "packed"))


def _direct(bare, grid: tuple, fixed: list, tail: tuple, dynamic: tuple, tensors: tuple):
    """A function that launches one key's compiled kernel given only its dynamic values, in order
    (tensors where `tensors` says, whose addresses it takes, else ints): one Python call of the C
    launch with every other argument bound in its closure. Copying the fixed addresses into a list and
    writing the dynamic ones into it cost ~2-4 µs per launch of the sampler's (~45 and ~75 arguments)
    on this project's CPU; this is the code Triton's own binder generates for its runner, without
    the binding. Under the interpreter (`bare` a _Recorder) its `launched` attribute is the recorder."""
    launch, function, coop, pdl, packed = bare
    g = tuple(grid) + (1,) * (3 - len(grid))
    recorded = isinstance(bare, _Recorder)
    env = {"launch_": launch, "function_": function, "coop_": coop, "pdl_": pdl, "packed_": packed,
           "stream_of_": (lambda dev: "stream") if recorded else torch._C._cuda_getCurrentRawStream,
           "device_": (lambda: None) if recorded else torch._C._cuda_getDevice,
           "g0_": g[0], "g1_": g[1], "g2_": g[2]}
    where = {i: j for j, i in enumerate(dynamic)}
    values = []
    for i, x in enumerate(fixed):
        j = where.get(i)
        if j is None:
            env[f"f{i}"] = x
            values.append(f"f{i}")
        else:
            values.append(f"d{j}.data_ptr()" if tensors[j] else f"d{j}")
    for i, x in enumerate(tail):
        env[f"t{i}"] = x
        values.append(f"t{i}")
    params = ", ".join(f"d{j}" for j in range(len(dynamic)))
    src = (f"def make({', '.join(env)}):\n"
           f"    def direct({params}):\n"
           f"        launch_(g0_, g1_, g2_, stream_of_(device_()), function_, coop_, pdl_, None, None, packed_, "
           f"None, None, None, {', '.join(values)})\n"
           f"    return direct\n")
    scope: dict = {}
    exec(src, scope)   # noqa: S102 - generated from this function's own names only
    direct = scope["make"](**env)
    if recorded:
        direct.launched = launch
    return direct
