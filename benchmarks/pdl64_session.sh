#!/usr/bin/env bash
# Run 58 (one device call): the top-k with PDL up to 64 rows (pdl.py; run 57 measured a gain at 64 rows once):
# exactness at V = 151936 (rows 1, 3, 64, 256: 64 now with PDL), graph replay and compile count over 1..70
# rows after topk_warmup, then 64 and 128 rows with the default bound against SONICSAMPLER_PDL_MAX_ROWS=32.
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 120 python3 benchmarks/check_topk_gpu.py exact graph \
    | grep -v "'what': 'env'" | grep -v exactness_so_far
for p in 64 32 64 32; do
  SONICSAMPLER_PDL_MAX_ROWS=$p timeout 60 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 \
      --rows 32,64,128 --budget-ms 60 --out "$OUT/topk_pdl$p.csv" 2>&1 | grep "^topk " | sed "s/^/pdl_max=$p /"
done
