#!/usr/bin/env bash
# Run 56 (one device call): checks after runs 51-55: the top-k's exactness at V = 32000 and 262144 under the
# retuned table (256-token tiles), its graph replay and compile count; production-size sampler tokens;
# verification's graph replay.
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CHECK_VOCABS=32000,262144 CHECK_CONFIGS= CHECK_KS=1,128 timeout 150 python3 benchmarks/check_topk_gpu.py exact graph \
    | grep -v "'what': 'env'" | grep -v exactness_so_far
timeout 230 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
timeout 150 python3 benchmarks/check_sampler_gpu.py verify_graph 2>&1 | grep -v "'what': 'env'"
