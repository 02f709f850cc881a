"""A faster Triton interpreter for the CPU test suite and demonstration (never applied on a GPU path).

Two costs of the interpreter that are not the kernels' work (together, measured below, most of CI's time):

1. Under TRITON_INTERPRET=1, Triton 3.6 re-patches `triton.language` on every call of one @triton.jit
   function from another (`InterpretedFunction.__call__` runs `_patch_lang`, which walks the modules with
   `inspect.getmembers` and wraps each builtin again), although the kernel launch in progress has already
   patched the same modules and will restore them when it ends. Our kernels call small helpers per tile
   and per pass, so that walk took about half of the interpreter's time (cProfile of the long-row
   statistical test, 40 of its rows: 44 of 90 s). `install()` makes the repeat a no-op while a launch
   is in progress: a helper whose language modules (`triton.language`, `triton.language.core`) were
   all patched by the running launch gets an empty scope; anything else is patched as before, and the
   record is cleared when the launch returns or raises (after Triton's own restore). The wrappers
   Triton would install again are equal to those in place (same builtins, the same global interpreter
   builder).

2. CPython 3.11 keeps frames on a stack of 16 KiB chunks, mapped with mmap when a call does not fit in
   the current one and unmapped as soon as that call returns. Where a chunk's end falls inside the call
   chain an interpreted tile operation runs through (a depth that depends on how deep the test's own
   frames are), every operation maps and unmaps a chunk: one verification test made 1.75 million page
   faults and spent 10.4 of its 41 s in the kernel (strace: 580 000 mmap/munmap pairs of 16 KiB). So
   each launch is entered through a frame larger than a chunk (`_FRESH_CHUNK`, ~16.9 KiB), which gets
   a chunk of its own (32 KiB): the launch then runs at a fixed offset in that chunk, whatever the
   caller's depth, with ~15.8 KiB left for its deepest chain (the same test: 0.4 s in the kernel, 27 s
   in all).

3. A `tl.reduce` with a combine function of our own (a tuple of sums, counts and maxima) runs in the
   interpreter's `generic_reduce`, which calls the combine once per element, in Python: the long rows'
   wide step reduces 2048 words that way, and such reductions took 45 of the 64 s of 50 rows of the
   long-nucleus statistical test (cProfile, session 39). Where every operand is an integer or a bool,
   `install()` reduces by halving instead: the combine on adjacent pairs, elementwise over all of them
   at once, log2(n) calls. Integer operations are exact, so any grouping of an associative combine (which
   tl.reduce requires: the GPU's reduction is a tree too) gives the sequential result bit for bit. Float
   operands keep the sequential reduction, whose rounding the tests were written against.

None of these changes what a kernel computes; tests/test_interpreter_speedup.py checks a launch's outputs
with and without them.

Not applied on import of the package: tests/conftest.py and the `demo` command call `install()`. It
does nothing when the running Triton lacks the function it wraps, or when SONICSAMPLER_FAST_INTERPRETER
is "0".
"""
from __future__ import annotations

import inspect
import os

_installed = False


# A function whose frame (2100 locals, 8 bytes each: ~16.9 KiB) exceeds a 16 KiB chunk of CPython 3.11's
# frame stack, so it always gets a chunk of its own and what it calls runs at a fixed offset in that
# chunk, whatever the caller's depth. Generated: 2100 names are not written out by hand.
_PAD_LOCALS = 2100
_namespace: dict = {}
exec(compile("def _fresh_chunk(fn, args, kwargs):\n    " + " = ".join(f"_v{i}" for i in range(_PAD_LOCALS))
             + " = None\n    return fn(*args, **kwargs)\n", "<interpreter_speedup>", "exec"), _namespace)
_FRESH_CHUNK = _namespace["_fresh_chunk"]


class _NoChanges:
    def restore(self) -> None:
        pass


def install() -> bool:
    """Wrap the interpreter's `_patch_lang` and its launches (idempotent). True when in place."""
    global _installed
    if _installed:
        return True
    if os.environ.get("SONICSAMPLER_FAST_INTERPRETER", "1") == "0":
        return False
    try:
        import triton.language as tl
        import triton.runtime.interpreter as interp
    except ImportError:
        return False
    original = getattr(interp, "_patch_lang", None)
    if original is None:
        return False
    active: set[int] = set()   # ids of the language modules the launch in progress has patched
    depth = [0]                # launches in progress (a launch is entered through launch_in_fresh_chunk)

    def patch_lang_once(fn):
        langs = {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}
        if depth[0] > 0 and langs and langs <= active:
            return _NoChanges()
        # A launch's own patch, a helper that sees another language module, or a jit function called
        # from host code (outside any launch: its patches are Triton's business, nothing is recorded).
        scope = original(fn)
        if depth[0] > 0:
            active.update(langs)
        return scope

    interp._patch_lang = patch_lang_once
    executor = getattr(interp, "GridExecutor", None)
    if executor is not None:
        launch = executor.__call__

        def launch_in_fresh_chunk(self, *args, **kwargs):
            depth[0] += 1
            try:
                return _FRESH_CHUNK(launch, (self,) + args, kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    active.clear()   # the launch restored its patches (Triton's finally)
        executor.__call__ = launch_in_fresh_chunk
    reduce_ops = getattr(interp, "ReduceOps", None)
    if reduce_ops is not None and hasattr(reduce_ops, "generic_reduce"):
        reduce_ops.generic_reduce = _halving_reduce(reduce_ops.generic_reduce)
    _installed = True
    return True


def _halving_reduce(sequential):
    """ReduceOps.generic_reduce by halving where every operand is an integer or a bool (item 3 above);
    anything else goes to `sequential`, the interpreter's own."""
    import numpy as np

    def generic_reduce(self, input):
        if not all(arg.dtype.scalar.is_int() or arg.dtype.scalar.is_bool() for arg in input):
            return sequential(self, input)
        original_axis = self.axis
        # (Not self.unravel: for axis None it flattens the first operand only.)
        axis = 0 if original_axis is None else original_axis
        dtypes = [arg.dtype for arg in input]
        data = [np.moveaxis(arg.handle.data.reshape(-1) if original_axis is None else arg.handle.data, axis, 0)
                for arg in input]
        while data[0].shape[0] > 1:
            n = data[0].shape[0]
            h = n // 2
            left = [self.to_tensor(np.ascontiguousarray(d[0:2 * h:2]), t) for d, t in zip(data, dtypes)]
            right = [self.to_tensor(np.ascontiguousarray(d[1:2 * h:2]), t) for d, t in zip(data, dtypes)]
            ret = self.combine_fn.fn(*left, *right)
            ret = ret if isinstance(ret, tuple) else (ret,)
            shape = data[0][0:2 * h:2].shape
            nxt = []
            for j, r in enumerate(ret):
                v = r.handle.data if hasattr(r, "handle") else r
                v = np.broadcast_to(np.asarray(v), shape).astype(data[j].dtype)
                if n % 2:
                    v = np.concatenate([v, data[j][2 * h:]], axis=0)
                nxt.append(v)
            data = nxt
        out = []
        for d, t in zip(data, dtypes):
            d = d[0]
            if self.keep_dims:
                if original_axis is not None:
                    d = np.expand_dims(d, axis)
                else:
                    for _ in range(len(input[0].handle.data.shape)):
                        d = np.expand_dims(d, 0)
            elif original_axis is None:
                d = d.item()
            out.append(self.to_tensor(d, t))
        return out

    generic_reduce.__name__ = "halving_generic_reduce"
    return generic_reduce
