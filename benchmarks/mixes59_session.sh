#!/usr/bin/env bash
# Run 59 (one device call): after stage 2's changes (runs 51-52), the mixes issue 4 names (heavy; top-20
# raw logprobs beside the plain top-k mix) at 1 / 32 / 128 rows, then verification (γ = 3) against
# FlashInfer's chain at V = 32768 (issue 6's 3x).
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 260 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
    --mix top_k,standard_logprobs,heavy
timeout 260 python3 benchmarks/run.py --case verify --gamma 3 --vocab 32768 --rows 1,4,16,32,64,128 \
    --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep "^verify "
