"""A faster Triton interpreter for the CPU test suite and demonstration (never applied on a GPU path).

Under TRITON_INTERPRET=1, Triton 3.6 re-patches `triton.language` on every call of one @triton.jit
function from another (`InterpretedFunction.__call__` runs `_patch_lang`, which walks the modules with
`inspect.getmembers` and wraps each builtin again), although the kernel launch in progress has already
patched the same modules and will restore them when it ends. Our kernels call small helpers per tile
and per pass, so that walk took about half of the interpreter's time (cProfile of the long-row
statistical test: 44 of 90 s) and doubled CI's time.

`install()` makes the repeat a no-op while a launch's patches are active: a helper whose language
modules (`triton.language`, `triton.language.core`) were all patched by the running launch gets an
empty scope; anything else is patched as before, and the launch's restore (Triton's `finally`) clears
the record. The wrappers Triton would install again are equal to those in place (same builtins, the
same global interpreter builder), so kernels compute exactly what they did; tests/test_interpreter_speedup.py
checks a launch's outputs with and without it.

Not applied on import of the package: tests/conftest.py and the `demo` command call `install()`. It
does nothing when the running Triton lacks the function it wraps, or when SONICSAMPLER_FAST_INTERPRETER
is "0".
"""
from __future__ import annotations

import inspect
import os

_installed = False


class _NoChanges:
    def restore(self) -> None:
        pass


def install() -> bool:
    """Wrap the interpreter's `_patch_lang` (idempotent). True when the wrapper is in place."""
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

    def patch_lang_once(fn):
        langs = {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}
        if active and langs <= active:
            return _NoChanges()
        scope = original(fn)
        outermost = not active
        active.update(langs)
        if outermost:
            restore = scope.restore

            def restore_and_forget():
                active.clear()
                restore()
            scope.restore = restore_and_forget
        return scope

    interp._patch_lang = patch_lang_once
    _installed = True
    return True
