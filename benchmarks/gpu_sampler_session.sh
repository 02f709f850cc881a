#!/usr/bin/env bash
# One device call for the fused sampler (run from the repository root on the GPU machine, carry .whl):
#     BENCH_GIT_COMMIT=<sha> bash benchmarks/gpu_sampler_session.sh
# Graph capture check, the launch-table sweep (installed into the tree copy, so that the comparison
# that follows uses it), the comparison with the baselines in one run, the named mixes, and where the
# host time of an eager call goes. Each step has its own time limit; results land in $OUT.
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 80 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
timeout 200 python3 benchmarks/tune_sampler.py --out "$OUT/sample_sm90.json" --install --warps 8x8,4x8
timeout 170 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler \
    --vocab 151936 --budget-ms 200 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
timeout 90 python3 benchmarks/sampler_mix.py --rows 32 --out "$OUT/sample_mix.csv" \
    --mix top_p,standard_logprobs,processing,logprobs,heavy,greedy,base,bounded_approx,long_nucleus_1_in_16
timeout 30 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,32
