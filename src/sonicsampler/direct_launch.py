"""A compiled kernel launched through cuLaunchKernelEx with its parameters kept in C memory.

Triton's C launcher takes every argument as a Python object on every launch: about 75 of them for
the sampler's stage 2 (constexprs included), parsed one by one before the driver call. An eager
sampler call spent ~14 µs in its two launches on an H100 (run 113), against a 25 µs budget for the
whole call. Here the parameter block is built once per compiled variant: each launch writes only the
values that change between calls (the dynamic ones: logits, outputs, strides) into it and calls the
driver with it, through ctypes without releasing the GIL (so two Python threads cannot interleave
their writes with another's launch).

It launches as Triton's launcher does (same parameter order: the signature's non-constexpr
arguments, then the global and profile scratch pointers, both null; block of 32 * num_warps threads;
dynamic shared memory; the PDL and cooperative attributes), and only kernels it can launch so:
DirectLaunch.build returns None for a kernel with scratch, clusters, tensor descriptors or a float
argument that changes between calls, and the launcher then keeps Triton's path.
"""
from __future__ import annotations

import ctypes
import struct

import torch

_M64 = (1 << 64) - 1
_ATTR_COOPERATIVE, _ATTR_PDL = 2, 6   # CUlaunchAttributeID: COOPERATIVE, PROGRAMMATIC_STREAM_SERIALIZATION


class _Attribute(ctypes.Structure):
    """CUlaunchAttribute: a 4-byte id, padding to 8, a 64-byte value union (its first int is the flag)."""
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("value", ctypes.c_int32 * 16)]


class _Config(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attribute)), ("numAttrs", ctypes.c_uint)]


_driver_launch = None


def driver_launch():
    """cuLaunchKernelEx(config*, function, params**, extra**) -> CUresult, called with the GIL held."""
    global _driver_launch
    if _driver_launch is None:
        f = ctypes.PyDLL("libcuda.so.1").cuLaunchKernelEx
        f.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        f.restype = ctypes.c_int
        _driver_launch = f
    return _driver_launch


def _bits(ty: str, v) -> int | None:
    """The parameter's bytes as an unsigned 64-bit int (little-endian: a narrower parameter reads the low
    bytes), or None for a type this launch does not pack."""
    if ty.startswith("*"):
        return 0 if v is None else (v.data_ptr() if isinstance(v, torch.Tensor) else int(v))
    if ty[0] in "iu" and ty[1:].isdigit():
        return int(v) & _M64
    if ty in ("fp32", "f32"):
        return struct.unpack("<I", struct.pack("<f", v))[0]
    if ty == "fp64":
        return struct.unpack("<Q", struct.pack("<d", v))[0]
    if ty == "fp16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    if ty == "bf16":   # Triton's launcher keeps the upper half of the fp32 bits
        return struct.unpack("<I", struct.pack("<f", v))[0] >> 16
    return None


class DirectLaunch:
    def __init__(self, function: int, num_warps: int, shared: int, pdl: bool, cooperative: bool,
                 types: list, values: list, dynamic: tuple, launch_fn=None):
        """types: each argument's Triton type ("constexpr" for those the compile folded in); values:
        every argument at its first launch; dynamic: the positions whose values change between calls."""
        slot = {}
        words = []
        for i, (ty, v) in enumerate(zip(types, values)):
            if ty == "constexpr":
                continue
            b = _bits(ty, v)
            if b is None:
                raise ValueError(f"argument {i}: type {ty!r}")
            slot[i] = len(words)
            words.append(b)
        words += [0, 0]   # the global and profile scratch pointers: none
        for i in dynamic:
            if i in slot and not (types[i].startswith("*") or types[i][0] in "iu"):
                raise ValueError(f"dynamic argument {i}: type {types[i]!r}")
        # The dynamic values live in a block of their own, in the call's order, so that one
        # struct.pack_into writes them all (signed 64-bit for integers: a narrower parameter reads the
        # low bytes of the two's complement); the parameter pointers of those arguments point there.
        # A dynamic argument the compile folded in (an integer that was 1) keeps that value for this
        # variant's whole key: its entry in the block is written and never read.
        self.storage = (ctypes.c_uint64 * len(words))(*words)
        self.dyn_block = (ctypes.c_uint64 * max(len(dynamic), 1))()
        self.dyn_format = "<" + "".join("Q" if i in slot and types[i].startswith("*") else "q" for i in dynamic)
        base, dyn_base = ctypes.addressof(self.storage), ctypes.addressof(self.dyn_block)
        at = {k: dyn_base + 8 * j for j, i in enumerate(dynamic) if i in slot for k in (slot[i],)}
        self.params = (ctypes.c_void_p * len(words))(*[at.get(k, base + 8 * k) for k in range(len(words))])
        struct.pack_into(self.dyn_format, self.dyn_block, 0,
                         *[(words[slot[i]] if fmt == "Q" else int(values[i])) if i in slot else 0
                           for i, fmt in zip(dynamic, self.dyn_format[1:])])
        self.attrs = (_Attribute * 2)()
        n_attr = 0
        for flag, attr_id in ((pdl, _ATTR_PDL), (cooperative, _ATTR_COOPERATIVE)):
            if flag:
                self.attrs[n_attr].id = attr_id
                self.attrs[n_attr].value[0] = 1
                n_attr += 1
        c = self.config = _Config()
        c.gridDimY = c.gridDimZ = c.blockDimY = c.blockDimZ = 1
        c.blockDimX = 32 * num_warps
        c.sharedMemBytes = shared
        c.attrs = self.attrs
        c.numAttrs = n_attr
        self.function, self.dynamic = function, dynamic
        self.config_addr, self.params_addr = ctypes.addressof(c), ctypes.addressof(self.params)
        self.launch_fn = launch_fn or driver_launch()

    @classmethod
    def build(cls, compiled, values: list, dynamic: tuple) -> "DirectLaunch | None":
        """For a kernel Triton compiled and launched once with `values`, or None where this launch
        cannot stand in for Triton's (then the caller keeps Triton's launcher)."""
        try:
            run = compiled.run
            num_warps, num_ctas, shared = compiled.packed_metadata
            sig = compiled.src.signature
            if run.global_scratch_size or run.profile_scratch_size or num_ctas != 1 or len(sig) != len(values):
                return None
            types = list(sig.values())
            if not all(isinstance(t, str) for t in types):   # tuple arguments
                return None
            return cls(compiled.function, num_warps, shared, bool(run.launch_pdl),
                       bool(run.launch_cooperative_grid), types, list(values), dynamic)
        except (AttributeError, ValueError, OSError, TypeError):
            return None

    def __call__(self, grid: tuple, dyn, stream: int) -> bool:
        """Launch a 3-dimensional grid with the call's dynamic values; False if the driver refused (the caller then launches
        through Triton, whose launcher raises the driver's error by name)."""
        if grid[0] * grid[1] * grid[2] == 0:   # nothing to run (Triton's launcher skips it too)
            return True
        struct.pack_into(self.dyn_format, self.dyn_block, 0,
                         *[x.data_ptr() if isinstance(x, torch.Tensor) else x for x in dyn])
        c = self.config
        c.gridDimX, c.gridDimY, c.gridDimZ, c.hStream = grid[0], grid[1], grid[2], stream
        return self.launch_fn(self.config_addr, self.function, self.params_addr, None) == 0
