"""direct_launch.DirectLaunch: the parameter block it hands the driver, read back through a stand-in for
cuLaunchKernelEx. The real launch needs a GPU (benchmarks/check_sampler_gpu.py compares its results
with the reference and with Triton's launcher); here the block's layout is checked: the signature's
non-constexpr arguments in order, each at its width, then two null scratch pointers, the dynamic values
of each call written over the first call's, and the launch configuration and attributes."""
import ctypes
import importlib
import struct
from types import SimpleNamespace

import pytest
import torch

from sonicsampler import direct_launch
from sonicsampler.direct_launch import DirectLaunch

launch_mod = importlib.import_module("sonicsampler.launch")


class _Driver:
    """Records what each launch passes: the configuration's fields and every parameter's 8 bytes."""

    def __init__(self, n_params, result=0):
        self.n, self.result, self.calls = n_params, result, []

    def __call__(self, config, function, params, extra):
        c = direct_launch._Config.from_address(config)
        ptrs = (ctypes.c_void_p * self.n).from_address(params)
        words = [ctypes.c_uint64.from_address(p).value for p in ptrs]
        attrs = [(c.attrs[i].id, c.attrs[i].value[0]) for i in range(c.numAttrs)]
        self.calls.append({"grid": (c.gridDimX, c.gridDimY, c.gridDimZ),
                           "block": (c.blockDimX, c.blockDimY, c.blockDimZ), "shared": c.sharedMemBytes,
                           "stream": c.hStream, "attrs": attrs, "function": function, "words": words, "extra": extra})
        return self.result


_TYPES = ["*bf16", "i32", "constexpr", "*i64", "i64", "fp32", "i32", "constexpr", "*fp32", "i1"]


def _values(x, out):
    return [x, -7, 128, 2**40 + 3, -(2**40), 0.7, 1, True, out, True]


def _words(x, out):
    """What the kernel's parameters hold, in order: constexprs left out, each value in its width's low
    bytes, two null scratch pointers at the end."""
    return [x.data_ptr(), (-7) & (2**64 - 1), 2**40 + 3, (-(2**40)) & (2**64 - 1),
            struct.unpack("<I", struct.pack("<f", 0.7))[0], 1, out.data_ptr(), 1, 0, 0]


def test_parameter_block_layout_and_dynamic_values():
    x, out = torch.randn(4, 8), torch.empty(4)
    drv = _Driver(10)
    d = DirectLaunch(0xABC, num_warps=8, shared=4096, pdl=True, cooperative=False, types=_TYPES,
                     values=_values(x.data_ptr(), out.data_ptr()), dynamic=(0, 1, 2, 8), launch_fn=drv)
    assert d((5, 1, 1), (x, -7, 128, out), stream=77)
    first = drv.calls[-1]
    assert first["words"] == _words(x, out)
    assert first["grid"] == (5, 1, 1) and first["block"] == (256, 1, 1) and first["shared"] == 4096
    assert first["stream"] == 77 and first["function"] == 0xABC and first["extra"] is None
    assert first["attrs"] == [(direct_launch._ATTR_PDL, 1)]
    # a second call: new tensors and a new int at the dynamic positions; the constexpr at position 2
    # (an int the compile folded in) is not a parameter and its value is ignored
    x2, out2 = torch.randn(6, 8), torch.empty(6)
    assert d((3, 2, 1), (x2, 5, 999, out2), stream=78)
    second = drv.calls[-1]
    want = _words(x2, out2)
    want[1] = 5
    assert second["words"] == want and second["grid"] == (3, 2, 1) and second["stream"] == 78


def test_cooperative_and_no_attributes():
    drv = _Driver(3)
    DirectLaunch(1, 4, 0, pdl=False, cooperative=True, types=["i32"], values=[3], dynamic=(), launch_fn=drv)((1, 1, 1), (), 0)
    assert drv.calls[-1]["attrs"] == [(direct_launch._ATTR_COOPERATIVE, 1)]
    DirectLaunch(1, 4, 0, pdl=False, cooperative=False, types=["i32"], values=[3], dynamic=(), launch_fn=drv)((1, 1, 1), (), 0)
    assert drv.calls[-1]["attrs"] == [] and drv.calls[-1]["words"] == [3, 0, 0]


def test_empty_grid_launches_nothing_and_driver_errors_are_reported():
    drv = _Driver(3, result=1)   # CUDA_ERROR_INVALID_VALUE
    d = DirectLaunch(1, 4, 0, False, False, ["i32"], [3], (0,), launch_fn=drv)
    assert d((0, 1, 1), (4,), 0) and not drv.calls
    assert d((2, 1, 1), (4,), 0) is False


def _compiled(**over):
    run = SimpleNamespace(global_scratch_size=0, profile_scratch_size=0, launch_pdl=True, launch_cooperative_grid=False)
    c = SimpleNamespace(run=run, packed_metadata=(8, 1, 0), src=SimpleNamespace(signature={"a": "*bf16", "b": "i32"}),
                        function=5)
    for k, v in over.items():
        if k in vars(run):
            setattr(run, k, v)
        else:
            setattr(c, k, v)
    return c


@pytest.mark.parametrize("over,dynamic", [
    ({"global_scratch_size": 64}, (0,)),
    ({"packed_metadata": (8, 2, 0)}, (0,)),                                        # a cluster
    ({"src": SimpleNamespace(signature={"a": ("*bf16", "*bf16"), "b": "i32"})}, (0,)),   # a tuple argument
    ({"src": SimpleNamespace(signature={"a": "*bf16", "b": "fp32"})}, (1,)),        # a float that changes
    ({"src": SimpleNamespace(signature={"a": "*bf16", "b": "nvTmaDesc"})}, (0,)),
])
def test_kernels_it_cannot_launch_keep_tritons_launcher(monkeypatch, over, dynamic):
    monkeypatch.setattr(direct_launch, "driver_launch", lambda: _Driver(4))
    assert DirectLaunch.build(_compiled(), [0x100, 3], dynamic) is not None
    assert DirectLaunch.build(_compiled(**over), [0x100, 3], dynamic) is None


class _FakeJit:
    """A JITFunction stand-in: fn[grid](*args) 'compiles' (returns _compiled()) and records the launch."""

    def __init__(self):
        def kernel(a, b, C=4):
            pass
        self.fn, self.arg_names, self.through_triton = kernel, ["a", "b", "C"], []

    def __getitem__(self, grid):
        def go(*args, **consts):
            self.through_triton.append(args)
            return _compiled(src=SimpleNamespace(signature={"a": "*bf16", "b": "i32", "C": "constexpr"}))
        return go


def test_launcher_goes_direct_after_the_first_launch_and_falls_back_on_a_driver_error(monkeypatch):
    """Launcher.launch: the first launch of a key compiles through Triton, later ones write the dynamic
    values into the kept block; a driver error sends that launch through Triton's launcher (which
    raises it by name); SONICSAMPLER_DIRECT_LAUNCH's flag (launch.DIRECT) switches the path off."""
    drv = _Driver(4)
    monkeypatch.setattr(direct_launch, "driver_launch", lambda: drv)
    monkeypatch.setattr(launch_mod, "INTERPRETED", False)
    monkeypatch.setattr(launch_mod, "bare_launch", lambda compiled: ("stand-in",))
    monkeypatch.setattr(launch_mod, "current_stream", lambda: 9)
    through_c = []
    monkeypatch.setattr(launch_mod.Launcher, "_go", staticmethod(lambda grid, c, tail, a, bare: through_c.append(a)))
    fn = _FakeJit()
    ln = launch_mod.Launcher(fn)
    dynamic = (0,)
    x = torch.randn(3)
    ln.launch((2,), "k", (x,), lambda: (x, 11), {"C": 4}, dynamic)
    assert len(fn.through_triton) == 1 and not drv.calls
    y = torch.randn(3)
    ln.launch((3,), "k", (y,), lambda: (y, 11), {"C": 4}, dynamic)
    assert drv.calls[-1]["words"] == [y.data_ptr(), 11, 0, 0] and drv.calls[-1]["grid"] == (3, 1, 1)
    assert drv.calls[-1]["stream"] == 9 and not through_c
    drv.result = 700   # an error: this launch goes through Triton's C launcher
    ln.launch((3,), "k", (x,), lambda: (x, 11), {"C": 4}, dynamic)
    assert through_c == [[x.data_ptr(), 11]]
    drv.result = 0
    monkeypatch.setattr(launch_mod, "DIRECT", False)
    n = len(drv.calls)
    ln.launch((3,), "k", (y,), lambda: (y, 11), {"C": 4}, dynamic)
    assert len(drv.calls) == n and through_c[-1] == [y.data_ptr(), 11]
