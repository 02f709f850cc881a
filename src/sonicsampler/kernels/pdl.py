"""Programmatic dependent launch (Hopper and later): stage 2 is launched so that it may start while
stage 1's last programs drain, hiding its launch latency; it must then wait, before reading anything
stage 1 wrote, until stage 1 has completed and its writes are visible."""
import triton
import triton.language as tl


@triton.jit
def wait_for_stage1(PDL: tl.constexpr):
    if PDL:
        tl.extra.cuda.gdc_wait()
