#!/usr/bin/env bash
# Run 55 (one device call): the top-k at V = 32768 retuned after stage 2 got cheaper (runs 51-52), with
# smaller tiles (256, 512) among the candidates; the table rebuilt from the recorded timings plus these,
# then the top-k against its baselines at V = 32768 with the new table.
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 330 python3 benchmarks/tune_topk.py --vocabs 32768 --rows 1,4,16,32,64,128 --blocks 256,512,1024 \
    --emits 8,16 --warps1 1,2 --strategies extract --out "$OUT/run55_tune_topk.json" 2>&1 | tail -8
H=benchmarks/results/h100
python3 benchmarks/tune_topk.py --from-timings $H/run11_tune_topk.timings.jsonl $H/run17_tune_topk.timings.jsonl \
    $H/run18_tune_topk.timings.jsonl "$OUT/run55_tune_topk.json.timings.jsonl" --out src/sonicsampler/tuning/tables/topk_sm90.json \
    --gpu "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0: runs 17-18 (2026-11-21) over run 11; V = 32768 from run 55 (2026-11-22, commit $BENCH_GIT_COMMIT, after stage 2's changes of runs 51-52); configurations whose refill risk exceeds 1e-3 left out (tuning/topk_config.py); benchmarks/results/h100/RUNS.md"
cp src/sonicsampler/tuning/tables/topk_sm90.json "$OUT/"
timeout 150 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler --vocab 32768 \
    --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk "
