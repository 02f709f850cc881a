"""Benchmarks of sonicsampler against the baselines users already run (see README.md here)."""
