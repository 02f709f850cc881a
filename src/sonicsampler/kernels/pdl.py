"""Programmatic dependent launch (Hopper and later): stage 2 is launched while stage 1 still runs.

Each stage-1 program lets the next launch start as soon as it begins (`let_next_start`); once every
stage-1 program has done so, i.e. once its last wave is on the GPU, the driver starts stage 2's
programs, which do the work that needs nothing from stage 1 (their slot, flags and per-request
parameters) and then wait (`wait_for_previous`) until stage 1 has finished and its writes are visible.
That hides stage 2's launch latency and its first dependent loads behind stage 1's last wave.

Only a launch made with the `launch_pdl` option may start early, and only stage 2 is: a stage 1 always
waits for the whole previous launch, so a step never reads output counts that the previous step's
stage 2 is still writing. `PDL` is a constexpr of both stages, false under the interpreter (it cannot
run inline assembly) and on GPUs before sm_90 (griddepcontrol needs it), where both calls compile to
nothing.
"""
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def let_next_start(PDL: tl.constexpr):
    if PDL:
        gdc_launch_dependents()


@triton.jit
def wait_for_previous(PDL: tl.constexpr):
    if PDL:
        gdc_wait()
