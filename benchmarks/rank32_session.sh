#!/usr/bin/env bash
# Run 57 (one device call): stage 2 ranks the chosen keys on 32-bit keys (value over place) instead of
# the 64-bit ones: the selection's parts with both (the 64-bit one as part "before run 57"), stage 2 alone,
# top-k exactness, the top-k against its baselines at V = 151936, and programmatic dependent launch at 64 and
# 128 rows again (SONICSAMPLER_PDL_MAX_ROWS=128) now that stage 2 is shorter.
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 python3 benchmarks/profile_stage1_parts.py --rows 1,32 --block 1024 --emit 8 --warps 8 --stage2-only | grep "^stage 2"
timeout 80 python3 benchmarks/profile_topk_stages.py
CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 100 python3 benchmarks/check_topk_gpu.py exact \
    | grep -v "'what': 'env'" | tail -1
timeout 100 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler --vocab 151936 \
    --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk "
SONICSAMPLER_PDL_MAX_ROWS=128 timeout 80 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 \
    --rows 64,128 --budget-ms 60 --out "$OUT/topk_pdl128.csv" 2>&1 | grep "^topk " | sed "s/^/pdl_max=128 /"
