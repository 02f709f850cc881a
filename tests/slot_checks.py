"""Checks of a Sampler's slot table (sonicsampler/slots.py) shared by the sampler's and verification's tests."""
import torch


def assert_output_marked(table):
    """Every token counted in a slot's output is marked in the slot's output mask. The prologue reads
    counts only in the 32-token words that the mask marks (kernels/prologue.process), so a count
    without its bit would be read as 0."""
    counts = table.counts.cpu()
    marks = table.output_mask.cpu()
    for slot in range(table.max_slots):
        need = table.bitmask(torch.nonzero(counts[slot]).flatten().tolist())
        assert torch.equal(marks[slot] & need, need), slot
