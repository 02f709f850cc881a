#!/usr/bin/env bash
# Device calls for the fused sampler and verification (run from the repository root on the GPU machine,
# carry .whl, and .triton_cache.tgz when a previous call brought one back):
#     BENCH_GIT_COMMIT=<sha> bash benchmarks/gpu_sampler_session.sh topk|verify|verify_grid V [sample1]|longsets|longsets2|long|compare2|kernels|profile|tune|logprobs|stats|checks|compare|sweep|regs|division|compare3|noise|host|final|stages|mixes|mixes2|pdl|pdl2|final2|final3|compare4|diet_topk|diet2|diet3|tune32k|checks56|rank32|pdl64|mixes59|long60|long61|long62|host64|long65|long66|ncu67|stage68|stage69|tune70|final71|mixes72|logp73|logp74|logp75|checks76|stage77|verify77|checks77|final79|logp80|logp81|checks82|breakdown83a|breakdown83b|shared84|checks85|shared86|final87|help88|helpers90|ab91|ab92|regs93|checks94|ab95|verify96|ab97|ab98|graph99|ab100|div101|host102|host103|host104|checks105|ab105|narrow105|chunks106|claims107|claims107b|narrow107|claims108|counts109|counts109b|counts109c|after110|prefetch111|out112|host113|vhost114|vwarm115|direct116|launch117|vout118|admit119|admit120|host121|admit122|vhost123|checks125|raw129d|free131|free131b|keys132|keys132b|bias133|conv134|bias133b|keys136|keys136b|tune137|ncu138|shared139|shared139b|tickets140|tickets140b|codesize141|helpers142|uniform143|ids144|tune145|warps148|regs151|vcaps152|small153|refill154|tiles155|refill156|refill157|checks158|ab159|checks160|final161|outofline162|noinline163|tail164|tail165|stages166|refill167|rawfree168|digits169|digits169b|digits170|copies171|chunks172|diag173|final174|trace175|fold176|poll177|claims178|poll179|chunks180|spec181|early182|fine183|fine183b|acq184|final185|spec186|final187|probe189|copies192|copies193|copies195|handover196|trace202|trace199|wide197|wide198|wide200|wide201|ab204|spec205|help206|fit207|ceil208b|now209|early210|chain211|temp212|cg213|wide214|fold215|ncu216|red217|parts218|lb219|ca220|final221|poll222|trace223|scan224|own225|final226|grid227|fill228|fillab229|regs230|diag231|noinl232|final233|stalls234|ncusrc235|grid236|probe237|rowshare238|smem239|smem240|ncu241|trace242|fold243|fill244|loop245|grid246|grid247|grid248|cfg249|small250|tune251|stages252|small253
# Each part fits one 10-minute call at up to ~25 s of compilation per variant (estimated on an H100; a
# fresh machine took ~3 min for a whole part's variants in run 130).
# Every step's `timeout N` is clamped to the part's deadline, PART_SECONDS (default 540) after the start,
# and a step past it is skipped: the call's own 600 s limit would otherwise kill the part before its
# cache is packed (run 130 lost its last steps and its cache that way).
# The Triton cache travels between calls and sessions: unpacked from .triton_cache.tgz if carried, packed
# into $OUT/triton_cache.tgz.part* at the end (join them into .triton_cache.tgz in the repository root,
# git-ignored, and carry it). Binaries only (TRITON_STORE_BINARY_ONLY): the IR beside them made the
# cache ~60 MB, too large to carry with the tree. A kernel's key is its source, so what a session has not
# changed (.ab/old's code, the top-k) loads instead of compiling.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/triton_cache TRITON_STORE_BINARY_ONLY=1
mkdir -p "$TRITON_CACHE_DIR"
[ -f .triton_cache.tgz ] && tar -xzf .triton_cache.tgz -C "$TRITON_CACHE_DIR"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
DEADLINE=$((SECONDS + ${PART_SECONDS:-540}))
timeout() {   # timeout N CMD...: as coreutils' timeout, N clamped to the part's deadline
    local left=$((DEADLINE - SECONDS)) want=$1
    shift
    if [ "$left" -le 5 ]; then
        echo "== skipped, past the part's deadline: $*" | cut -c1-200
        return 124
    fi
    command timeout $((want < left ? want : left)) "$@"
}
# mix_ab LABEL SECONDS ARGS...: sampler_mix.py (V = 151936) with ARGS on the tree's code ("new", into
# $OUT/sample_mix.csv), then on the snapshot carried in .ab/old/src ("before", $OUT/sample_mix_before.csv),
# each step under SECONDS; LABEL goes after "== new" / "== before" (e.g. the round).
mix_ab() {
    local label=$1 secs=$2
    shift 2
    echo "== new$label"
    timeout "$secs" python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" "$@"
    echo "== before$label"
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout "$secs" python3 benchmarks/sampler_mix.py --vocab 151936 \
        --out "$OUT/sample_mix_before.csv" "$@"
}
# mix_variants LABEL SECONDS "V1 V2 ..." ARGS...: sampler_mix.py (V = 151936) with ARGS once per variant, in
# order, each step under SECONDS: "-" is the tree's code (labelled LABEL), any other name the snapshot in
# .ab/NAME/src; each into $OUT/sample_mix_<label or name>.csv (diagnostics of one change against several).
mix_variants() {
    local label=$1 secs=$2 variants=$3 v name pp
    shift 3
    for v in $variants; do
        name=$v pp="$PYTHONPATH"
        if [ "$v" = - ]; then name=$label; else pp="$PWD/.ab/$v/src:$PYTHONPATH"; fi
        echo "== $name"
        PYTHONPATH="$pp" timeout "$secs" python3 benchmarks/sampler_mix.py --vocab 151936 \
            --out "$OUT/sample_mix_$name.csv" "$@"
    done
}
# verify_ab SECONDS ROWS [ARGS...]: verification (γ = 3, V = 151936 unless ARGS, run.py's, say otherwise: the
# last --gamma / --vocab wins) on the tree's code, then on .ab/old/src
verify_ab() {
    local secs=$1 rows=$2
    shift 2
    timeout "$secs" python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows "$rows" \
        --impl sonicsampler --budget-ms 60 --out "$OUT/verify.csv" "$@" 2>&1 | grep -v "^ \|Warning\|warn"
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout "$secs" python3 benchmarks/run.py --case verify --gamma 3 \
        --vocab 151936 --rows "$rows" --impl sonicsampler --budget-ms 60 --out "$OUT/verify_before.csv" "$@" 2>&1 \
        | grep -v "^ \|Warning\|warn"
}
# ncu_source SECONDS TOP CASE...: Nsight Compute (--set full, lineinfo) on one call per CASE (profile_ncu.py's
# arguments, e.g. "sample top_p 1"), each under SECONDS: the details page into $OUT/ncu_details.txt, the TOP hot
# spots by SASS line and by source line into $OUT/ncu_hotspots_{sass,cuda}.txt, the CSVs into $OUT/ncu_csv.tgz
ncu_source() {
    local secs=$1 top=$2 c name view NCU
    shift 2
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    echo "ncu: $NCU"; "$NCU" --version | tail -1
    mkdir -p /tmp/ncu
    for c in "$@"; do
        name=$(echo "$c" | tr ' ' '_' | tr -d '-')
        timeout "$secs" "$NCU" --profile-from-start off --clock-control none --set full --import-source yes -f \
            -o "/tmp/ncu/$name" python3 benchmarks/profile_ncu.py $c > "/tmp/ncu/$name.log" 2>&1
        tail -2 "/tmp/ncu/$name.log"
        { echo "######## $c"; "$NCU" -i "/tmp/ncu/$name.ncu-rep" --page details; } >> "$OUT/ncu_details.txt" 2>&1
        for view in sass cuda; do
            "$NCU" -i "/tmp/ncu/$name.ncu-rep" --page source --csv --print-source $view > "/tmp/ncu/$name.$view.csv" 2>&1
            python3 benchmarks/ncu_hotspots.py "/tmp/ncu/$name.$view.csv" "$top" >> "$OUT/ncu_hotspots_$view.txt" 2>&1
        done
    done
    tar -czf "$OUT/ncu_csv.tgz" -C /tmp/ncu --exclude='*.ncu-rep' . ; ls -la "$OUT"
}
case "$1" in
  topk)     # runs 18-20 in one call: top-k exactness (fp16/fp32 shapes, table configurations), graph and
            # recompiles after topk_warmup, stage-2 parts, top-k against its baselines at four vocabularies
    CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 150 python3 benchmarks/check_topk_gpu.py exact graph \
        | grep -v "'what': 'env'"
    timeout 70 python3 benchmarks/profile_stage1_parts.py --rows 1,32,128 --block 1024 --emit 8 --warps 8 --stage2-only
    timeout 220 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler \
        --vocab 32768,131072,151936,262144 --budget-ms 100 --out "$OUT/topk.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  verify)   # run 26: verification with one stage-2 program per target row: tokens against the reference at
            # production sizes and graph replay, the γ = 3 line against the baselines, the sampler's 1-row point
    timeout 170 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    timeout 250 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
        --impl torch,flashinfer,flashinfer.k_only,sonicsampler --budget-ms 100 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn"
    timeout 120 python3 benchmarks/tune_sampler.py --rows 1 --out "$OUT/sample_sm90.json" \
        --configs rank/4096/16/8x8,extract/1024/8/1x8,extract/2048/8/2x8,extract/4096/16/4x8,rank/4096/16/4x8 ;;
  verify_grid)  # runs 27-29: the verification grid at one vocabulary ($2), every B and γ, against its baselines;
                # with $3 = sample1, first the sampler at 1 row against its baselines (the table's new 1-row point)
    [ "$3" = sample1 ] && timeout 90 python3 benchmarks/run.py --case sample --rows 1 --vocab "$2" \
        --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler --budget-ms 100 --out "$OUT/sample.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn"
    timeout 480 python3 benchmarks/run.py --case verify --vocab "$2" --gamma 1,3,5,7 \
        --impl torch,flashinfer,flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn" ;;
  longsets) # run 33: verification exact beyond the bound and its top-n log-probabilities: production-size
            # checks (mixed and long-set requests), the statistical tests at 1e5 draws, the γ = 3 line again
    timeout 230 python3 benchmarks/check_sampler_gpu.py verify verify_long 2>&1 | grep -v "'what': 'env'"
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py tests/test_verify.py \
        -k "draws_of_the_exact or distributed_as_the_target" 2>&1 | tail -6
    timeout 130 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn" ;;
  longsets2) # run 34: the sampler after the shared long-set passes and log-probabilities: against its
             # baselines, the mixes (long nucleus, min-p alone beyond the bound, logprobs), graph and compiles
    timeout 200 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --rows 1,32,128 \
        --vocab 151936 --budget-ms 80 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 240 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" \
        --mix top_p,standard_logprobs,long_nucleus_1_in_16
    timeout 130 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'" ;;
  long)     # run 34: every kind of set beyond the bound (top-k above it, top-p, both, min-p), bf16 and fp32, in
            # the sampler and in verification, at V = 151936; the exact paths' statistics at 1e5 draws
    timeout 330 python3 benchmarks/check_sampler_gpu.py long 2>&1 | grep -v "'what': 'env'"
    timeout 230 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact" 2>&1 | tail -4 ;;
  compare2) # run 30: the sampler against its baselines at V = 151936 (the table's new 1-row point), verification
            # at V = 32768 after the refill-safe emit
    timeout 290 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler \
        --vocab 151936 --budget-ms 80 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 250 python3 benchmarks/run.py --case verify --vocab 32768 --gamma 1,3 \
        --impl torch,flashinfer,flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn" ;;
  kernels)  # a kernel change: exactness at production sizes (both stage-1 strategies), then A/B timings
    timeout 150 python3 benchmarks/check_topk_gpu.py exact
    timeout 100 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 150 python3 benchmarks/tune_topk.py --vocabs 151936 --rows 1,32,128 --blocks 4096,8192 --emits 16,32 \
        --warps1 8 --out "$OUT/topk_sm90.json"
    timeout 170 python3 benchmarks/tune_sampler.py --rows 1,32,128 --blocks 4096 --emits 16 --warps 8x8,4x8 \
        --out "$OUT/sample_sm90.json" ;;
  profile)  # where the top-k's time goes (both stages, three compactions), graph check, top-k exactness
    timeout 150 python3 benchmarks/profile_stage1_parts.py
    timeout 120 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
    timeout 280 python3 benchmarks/check_topk_gpu.py exact ;;
  tune)     # after the 2-D compaction: its profile, the top-k and sampler tables, top-k exactness
    timeout 70 python3 benchmarks/profile_stage1_parts.py --rows 1,128 --warps 4
    timeout 200 python3 benchmarks/tune_topk.py --vocabs 151936,262144 --rows 1,4,16,32,64,128 --blocks 4096,8192 \
        --emits 16 --warps1 4,8 --out "$OUT/topk_sm90.json" | grep "us with"
    timeout 150 python3 benchmarks/tune_sampler.py --rows 1,32,128 --blocks 4096 --emits 16 --warps 8x8,4x8 \
        --strategies rank --out "$OUT/sample_sm90.json"
    timeout 160 python3 benchmarks/check_topk_gpu.py exact | grep -v "'what': 'env'" | tail -3 ;;
  logprobs) # raw top-n logprobs from the kernel: production-size checks, then their cost
    CHECK_STRATEGIES=rank timeout 200 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 200 python3 benchmarks/sampler_mix.py --rows 1,32,128 --mix top_p,standard_logprobs --out "$OUT/sample_mix.csv" ;;
  stats)    # the statistical tests at full power (1e5 draws each on a GPU): exact paths, verification
    timeout 500 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py tests/test_verify.py \
        -k "draws_of_the_exact or distributed_as_the_target" 2>&1 | tail -15 ;;
  checks)   # graph capture, compiles after warmup, verification against the reference on the GPU
    timeout 200 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_verify.py 2>&1 | tail -15 ;;
  compare)  # issues 3, 4 and 6 against their baselines at V = 151936, each case in one run
    timeout 250 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler \
        --vocab 151936 --budget-ms 150 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 110 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler \
        --vocab 151936 --budget-ms 150 --out "$OUT/topk.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 170 python3 benchmarks/run.py --case verify --quick --rows 1,32 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn" ;;
  sweep)    # the sampler's launch table for 32 and 128 rows (1 row is in the table)
    timeout 520 python3 benchmarks/tune_sampler.py --rows 32,128 --out "$OUT/sample_sm90.json" --warps 8x8,4x8 ;;
  regs)     # runs 35, 36, 38: stage 1's register cap (ptxas .maxnreg) at 32 and 128 rows, after the load / process
            # split; the table rebuilt from every timing (this run's replace earlier ones); then the sampler
            # and verification against their baselines on the new table; with $2 (seconds), production-size
            # tokens and graph replay
    timeout 220 python3 benchmarks/tune_sampler.py --rows 32,128 --out "$OUT/sample_sm90.json" --configs \
        extract/1024/8/1x8,extract/1024/8/1x8/160x0,extract/1024/8/1x8/128x0,extract/1024/8/1x8/112x0,extract/1024/8/1x8/96x0
    python3 benchmarks/tune_sampler.py --from-timings benchmarks/results/h100/run11_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run19_tune_sampler.timings.jsonl benchmarks/results/h100/run20_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run26_tune_sampler.timings.jsonl "$OUT/sample_sm90.json.timings.jsonl" \
        --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader), run 35" --out src/sonicsampler/tuning/tables/sample_sm90.json
    cp src/sonicsampler/tuning/tables/sample_sm90.json "$OUT/sample_sm90_table.json"
    timeout 150 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --rows 1,4,16,32,64,128 \
        --vocab 151936 --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 150 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    [ -n "$2" ] && timeout "$2" python3 benchmarks/check_sampler_gpu.py tokens graph 2>&1 | grep -v "'what': 'env'" ;;
  division) # run 37 (95eb3c8, whose prologue.py had the switch SONICSAMPLER_DIVISION): the cost of exact
            # division by the temperature (0 = div_rn, 1 = fp64 product, 2 = div.full, inexact) at 32 and
            # 128 rows and three register caps
    for d in 1 2 0; do
      SONICSAMPLER_DIVISION=$d timeout 150 python3 benchmarks/tune_sampler.py --rows 32,128 --out "$OUT/division$d.json" \
          --configs extract/1024/8/1x8,extract/1024/8/1x8/128x0,extract/1024/8/1x8/96x0 | sed "s/^/division=$d /"
    done
    python3 benchmarks/tune_sampler.py --from-timings benchmarks/results/h100/run11_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run19_tune_sampler.timings.jsonl benchmarks/results/h100/run20_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run26_tune_sampler.timings.jsonl "$OUT/division1.json.timings.jsonl" \
        --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader), run 37" --out src/sonicsampler/tuning/tables/sample_sm90.json
    cp src/sonicsampler/tuning/tables/sample_sm90.json "$OUT/sample_sm90_table.json"
    timeout 110 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --rows 1,32,128 \
        --vocab 151936 --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 110 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  compare3) # run 39: after the register caps and exact division (table of run 38): the sampler and verification
            # (γ = 3) against their baselines at every batch size, the untruncated and top-k mixes
    timeout 200 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --rows 1,4,16,32,64,128 \
        --vocab 151936 --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 150 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 180 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" --mix base,top_k ;;
  noise)    # run 40: the Gumbel noise's outer logarithm by MUFU (kernels/rng.py): the untruncated and top-k
            # mixes, the untruncated draws' statistics at 1e5 draws, production-size tokens; two-warp
            # stage-1 tiles at 32 and 128 rows beside the table's configurations
    timeout 150 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" --mix base,top_k
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact and untruncated" 2>&1 | tail -3
    timeout 130 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 130 python3 benchmarks/tune_sampler.py --rows 32,128 --out "$OUT/sample_sm90.json" --configs \
        extract/1024/8/1x8/160x0,extract/1024/8/1x8/128x0,extract/1024/8/2x8,extract/1024/8/2x8/128x0 ;;
  host)     # run 41: launches with fixed addresses (launch.Launcher dynamic): host time in the mixes (top-k,
            # logprobs, heavy, untruncated), graph replay against eager; stage 2's warps and register cap at
            # 512 rows (verification's B = 128, γ = 3), the table with that bucket, verification at B = 64, 128
    timeout 200 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" \
        --mix top_k,standard_logprobs,heavy,base
    timeout 90 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
    timeout 150 python3 benchmarks/tune_sampler.py --rows 512 --out "$OUT/sample_sm90.json" --configs \
        extract/1024/8/1x8/128x0,extract/1024/8/1x8/128x128,extract/1024/8/1x4/128x0,extract/1024/8/1x4/128x128
    python3 benchmarks/tune_sampler.py --from-timings benchmarks/results/h100/run11_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run19_tune_sampler.timings.jsonl benchmarks/results/h100/run20_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run26_tune_sampler.timings.jsonl benchmarks/results/h100/run38_tune_sampler.timings.jsonl \
        "$OUT/sample_sm90.json.timings.jsonl" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader), run 41" \
        --out src/sonicsampler/tuning/tables/sample_sm90.json
    cp src/sonicsampler/tuning/tables/sample_sm90.json "$OUT/sample_sm90_table.json"
    timeout 100 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 64,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  final)    # run 42: the heavy and logprobs mixes at 32 and 128 rows, verification (γ = 3) at B = 1, 32, 128
    timeout 260 python3 benchmarks/sampler_mix.py --rows 32,128 --out "$OUT/sample_mix.csv" --mix heavy,standard_logprobs
    timeout 170 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  stages)   # run 43: the sampler's time split into stage 1 and stage 2 (+ gap) per mix and batch size
    timeout 330 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix top_k,standard_logprobs,base,heavy \
        --out "$OUT/profile_stages.txt" ;;
  pdl)      # run 44: programmatic dependent launch (kernels/pdl.py) and the noise's inner log by polynomial / MUFU
            # (kernels/rng.py): the noise against float64 over every uniform, the top-k with PDL off and on,
            # the mixes (untruncated, top-k, standard) with it, production-size tokens, graph replay, top-k exactness
    timeout 40 python3 benchmarks/check_noise_gpu.py
    for p in 0 1; do
      SONICSAMPLER_PDL=$p timeout 75 python3 benchmarks/run.py --case topk --impl flashinfer.top_k,sonicsampler \
          --vocab 151936 --budget-ms 60 --out "$OUT/topk_pdl$p.csv" 2>&1 | grep -v "^ \|Warning\|warn" | sed "s/^/pdl=$p /"
    done
    timeout 170 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" --mix base,top_k,top_p
    timeout 150 python3 benchmarks/check_sampler_gpu.py tokens graph 2>&1 | grep -v "'what': 'env'"
    CHECK_VOCABS=151936,262144 CHECK_CONFIGS= CHECK_KS=1,128 timeout 60 python3 benchmarks/check_topk_gpu.py exact graph \
        | grep -v "'what': 'env'" ;;
  pdl2)     # run 45: PDL off (SONICSAMPLER_PDL_MAX_ROWS=0) and on at every batch size for the sampler, verification
            # (γ = 3) at B = 1, 4 likewise; the untruncated mix's register caps at 32 and 128 rows; the untruncated
            # draws' statistics at 1e5 draws
    for p in 0 100000; do
      SONICSAMPLER_PDL_MAX_ROWS=$p timeout 110 python3 benchmarks/run.py --case sample --impl sonicsampler \
          --vocab 151936 --budget-ms 60 --out "$OUT/sample_pdl$p.csv" 2>&1 | grep "^sample " | sed "s/^/pdl_max=$p /"
      SONICSAMPLER_PDL_MAX_ROWS=$p timeout 100 python3 benchmarks/run.py --case verify --impl sonicsampler --gamma 3 \
          --rows 1,4 --vocab 151936 --budget-ms 60 --out "$OUT/verify_pdl$p.csv" 2>&1 | grep "^verify " | sed "s/^/pdl_max=$p /"
    done
    timeout 120 python3 benchmarks/tune_sampler.py --rows 32,128 --mix base --out "$OUT/caps_base.json" --configs \
        extract/1024/8/1x8,extract/1024/8/1x8/160x0,extract/1024/8/1x8/128x0
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact and untruncated" 2>&1 | tail -3 ;;
  final2)   # run 46: untruncated rows without candidates (kernels/sample.py without_candidates) and PDL bounds per
            # launch pair: production-size tokens (mixed, and untruncated of every kind), the untruncated
            # draws' statistics at 1e5 draws, verification against the reference and its graph replay (PDL),
            # the untruncated and top-k mixes at V = 151936 and 262144
    timeout 150 python3 benchmarks/check_sampler_gpu.py tokens untruncated 2>&1 | grep -v "'what': 'env'"
    timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact and untruncated" 2>&1 | tail -2
    timeout 170 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    timeout 180 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936,262144 --out "$OUT/sample_mix.csv" \
        --mix base,top_k ;;
  final3)   # run 47: stage 1 builds keys for every row again (run 46: skipping them for rows without candidates
            # cost the top-k rows 12% at 128 rows): the mixes, untruncated rows of every kind at production
            # sizes, verification's graph replay with PDL
    timeout 200 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_k,top_p,base
    timeout 120 python3 benchmarks/check_sampler_gpu.py untruncated 2>&1 | grep -v "'what': 'env'"
    timeout 120 python3 benchmarks/check_sampler_gpu.py verify_graph 2>&1 | grep -v "'what': 'env'"
    timeout 130 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 262144 --out "$OUT/sample_mix.csv" \
        --mix top_k,base ;;
  compare4) # run 48: after PDL, the cheaper noise and candidate-free untruncated rows: the sampler, verification
            # (γ = 3) and the top-k against their baselines at V = 151936, then the long-nucleus mix
    timeout 130 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --vocab 151936 \
        --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep "^sample "
    timeout 230 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep "^verify "
    timeout 80 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler --vocab 151936 \
        --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk "
    timeout 100 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix long_nucleus_1_in_16 ;;
  diet_topk)    # run 51: stage 2 without dependent loads it can avoid (values decoded from keys, outputs stored
                # at their ranks, tiles' last keys loaded with the lists) and a prefix count over lists instead of
                # keys: the selection's parts (digit widths 8/6/5/4, warps 4/8), stage 2 alone, exactness (signed
                # zeros too), graph and compile count, the top-k against its baselines at two vocabularies
    timeout 150 python3 benchmarks/profile_stage1_parts.py --rows 1,32,128 --block 1024 --emit 8 --warps 4,8 --stage2-only
    timeout 60 python3 benchmarks/profile_topk_stages.py
    CHECK_VOCABS=151936,262144 CHECK_CONFIGS= CHECK_KS=1,128 timeout 150 python3 benchmarks/check_topk_gpu.py exact graph \
        | grep -v "'what': 'env'"
    timeout 160 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler \
        --vocab 151936,32768 --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk " ;;
  diet2)        # run 52: the same with 5-bit digits in the selection's search: stage 2 alone (also V = 32768), top-k
                # exactness and its comparison at two vocabularies, production-size sampler tokens, the sampler
                # against FlashInfer
    timeout 80 python3 benchmarks/profile_topk_stages.py
    CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 100 python3 benchmarks/check_topk_gpu.py exact \
        | grep -v "'what': 'env'" | tail -2
    timeout 160 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler \
        --vocab 151936,32768 --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk "
    timeout 120 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 110 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --vocab 151936 \
        --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep "^sample " ;;   # (cut off in run 52: a cold cache)
  diet3)        # run 53: the sampler against FlashInfer, verification against the reference and its graph replay,
                # verification (γ = 3) against FlashInfer, the top-k and logprobs mixes
    timeout 110 python3 benchmarks/run.py --case sample --impl flashinfer.probs,sonicsampler --vocab 151936 \
        --budget-ms 60 --out "$OUT/sample.csv" 2>&1 | grep "^sample "
    timeout 170 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    timeout 150 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep "^verify "
    timeout 120 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_k,standard_logprobs ;;
  tune32k)  # run 55: the top-k at V = 32768 retuned after stage 2 got cheaper (runs 51-52), with
              # smaller tiles (256, 512) among the candidates; the table rebuilt from the recorded timings plus these,
              # then the top-k against its baselines at V = 32768 with the new table.
    timeout 330 python3 benchmarks/tune_topk.py --vocabs 32768 --rows 1,4,16,32,64,128 --blocks 256,512,1024 \
        --emits 8,16 --warps1 1,2 --strategies extract --out "$OUT/run55_tune_topk.json" 2>&1 | tail -8
    H=benchmarks/results/h100
    python3 benchmarks/tune_topk.py --from-timings $H/run11_tune_topk.timings.jsonl $H/run17_tune_topk.timings.jsonl \
        $H/run18_tune_topk.timings.jsonl "$OUT/run55_tune_topk.json.timings.jsonl" --out src/sonicsampler/tuning/tables/topk_sm90.json \
        --gpu "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0: runs 17-18 (2026-11-21) over run 11; V = 32768 from run 55 (2026-11-22, commit $BENCH_GIT_COMMIT, after stage 2's changes of runs 51-52); configurations whose refill risk exceeds 1e-3 left out (tuning/topk_config.py); benchmarks/results/h100/RUNS.md"
    cp src/sonicsampler/tuning/tables/topk_sm90.json "$OUT/"
    timeout 150 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler --vocab 32768 \
        --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk " ;;
  checks56) # run 56: checks after runs 51-55: the top-k's exactness at V = 32000 and 262144 under the
              # retuned table (256-token tiles), its graph replay and compile count; production-size sampler tokens;
              # verification's graph replay.
    CHECK_VOCABS=32000,262144 CHECK_CONFIGS= CHECK_KS=1,128 timeout 150 python3 benchmarks/check_topk_gpu.py exact graph \
        | grep -v "'what': 'env'" | grep -v exactness_so_far
    timeout 230 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 150 python3 benchmarks/check_sampler_gpu.py verify_graph 2>&1 | grep -v "'what': 'env'" ;;
  rank32)   # run 57: stage 2 ranks the chosen keys on 32-bit keys (value over place) instead of
              # the 64-bit ones: the selection's parts with both (the 64-bit one as part "before run 57"), stage 2 alone,
              # top-k exactness, the top-k against its baselines at V = 151936, and programmatic dependent launch at 64 and
              # 128 rows again (SONICSAMPLER_PDL_MAX_ROWS=128) now that stage 2 is shorter. The 32-bit ranks
              # were reverted after it, and the profiler's part for the 64-bit ones went with them.
    timeout 120 python3 benchmarks/profile_stage1_parts.py --rows 1,32 --block 1024 --emit 8 --warps 8 --stage2-only | grep "^stage 2"
    timeout 80 python3 benchmarks/profile_topk_stages.py
    CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 100 python3 benchmarks/check_topk_gpu.py exact \
        | grep -v "'what': 'env'" | tail -1
    timeout 100 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler --vocab 151936 \
        --budget-ms 60 --out "$OUT/topk.csv" 2>&1 | grep "^topk "
    SONICSAMPLER_PDL_MAX_ROWS=128 timeout 80 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 \
        --rows 64,128 --budget-ms 60 --out "$OUT/topk_pdl128.csv" 2>&1 | grep "^topk " | sed "s/^/pdl_max=128 /" ;;
  pdl64)    # run 58: the top-k with PDL up to 64 rows (pdl.py; run 57 measured a gain at 64 rows once):
              # exactness at V = 151936 (rows 1, 3, 64, 256: 64 now with PDL), graph replay and compile count over 1..70
              # rows after topk_warmup, then 64 and 128 rows with the default bound against SONICSAMPLER_PDL_MAX_ROWS=32.
    CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 120 python3 benchmarks/check_topk_gpu.py exact graph \
        | grep -v "'what': 'env'" | grep -v exactness_so_far
    for p in 64 32 64 32; do
      SONICSAMPLER_PDL_MAX_ROWS=$p timeout 60 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 \
          --rows 32,64,128 --budget-ms 60 --out "$OUT/topk_pdl$p.csv" 2>&1 | grep "^topk " | sed "s/^/pdl_max=$p /"
    done ;;
  long60)   # run 60: the exact passes over long rows with 4096-token sub-tiles loaded ahead, per-lane
            # results and trivial cuts skipped: every kind of long set checked against the reference (bf16,
            # fp32; sampler and verification), then the eager call of each timed
    timeout 420 python3 benchmarks/check_sampler_gpu.py long 2>&1 | grep -v "'what': 'env'" ;;
  long61)   # run 61: the long-row batches against the all-bounded one at 16 / 128 rows, sub-tiles of 1024
            # and 2048 alternating (the top-p rows do not use them: an A/A of the bounded batch); then the
            # code before (a snapshot of its src/ carried as .ab/old/src, if there)
    timeout 400 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --long-block 1024,2048 --budget-ms 100
    [ -d .ab/old/src ] && PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 150 python3 benchmarks/sampler_mix.py \
        --rows 16 --vocab 151936 --out "$OUT/sample_mix_before.csv" --mix long_nucleus_1_in_16,long_min_p_1_in_16 \
        --budget-ms 100 ;;
  long62)   # run 62: the search passes with lane-wise sums: the long-row batches against the all-bounded
            # one, every kind of long set against the reference, the exact paths' statistics at 1e5 draws
    timeout 200 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 100
    timeout 250 python3 benchmarks/check_sampler_gpu.py long 2>&1 | grep -v "'what': 'env'"
    timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact" 2>&1 | tail -3 ;;
  long65)   # run 65: 16-bit value keys alone in 32 bits in the passes over long rows (no index half, no decode
            # of the rank value without min-p): the long-row batches, then every kind of long set against the
            # reference, then the exact paths' statistics at 1e5 draws
    timeout 150 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 100
    timeout 330 python3 benchmarks/check_sampler_gpu.py long 2>&1 | grep -v "'what': 'env'"
    timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact" 2>&1 | tail -3 ;;
  ncu67)    # run 67: Nsight Compute (--set full, clocks left alone) on one call each: where stage 1 and stage 2
            # spend their time (occupancy, stalls, instructions, bytes); hot SASS lines per kernel
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    echo "ncu: $NCU"; "$NCU" --version | tail -1
    mkdir -p /tmp/ncu
    for c in "sample top_p 128" "topk - 128" "sample top_p 1" "verify 3 32" "sample base 128" "sample heavy 32"; do
        name=$(echo "$c" | tr ' ' '_' | tr -d '-')
        timeout 200 "$NCU" --profile-from-start off --clock-control none --set full --import-source no -f \
            -o "/tmp/ncu/$name" python3 benchmarks/profile_ncu.py $c > "/tmp/ncu/$name.log" 2>&1
        tail -2 "/tmp/ncu/$name.log"
        { echo "######## $c"; "$NCU" -i "/tmp/ncu/$name.ncu-rep" --page details; } >> "$OUT/ncu_details.txt" 2>&1
        { echo "######## $c"; "$NCU" -i "/tmp/ncu/$name.ncu-rep" --page raw --csv 2>&1 | python3 -c "
import csv, sys
rows = list(csv.reader(sys.stdin))
if rows:
    head, units = rows[0], rows[1] if len(rows) > 1 else []
    keep = [i for i, h in enumerate(head) if h in ('Kernel Name',) or 'issue_stalled' in h and 'ratio' in h
            or h.startswith(('launch__', 'sm__warps_active', 'dram__bytes', 'smsp__inst_executed.sum', 'gpu__time_duration',
                             'lts__t_bytes.sum', 'l1tex__t_bytes_pipe_lsu_mem_local', 'sm__throughput', 'smsp__issue_active'))]
    for r in rows[2:]:
        for i in keep:
            if i < len(r): print(head[i], '=', r[i])
        print('--')
"; } >> "$OUT/ncu_raw.txt" 2>&1
        "$NCU" -i "/tmp/ncu/$name.ncu-rep" --page source --csv --print-source sass > "/tmp/ncu/$name.sass.csv" 2>&1
        python3 benchmarks/ncu_hotspots.py "/tmp/ncu/$name.sass.csv" 40 >> "$OUT/ncu_hotspots.txt" 2>&1
        rm -f "/tmp/ncu/$name.ncu-rep"
    done
    tar -czf "$OUT/ncu_sass.tgz" -C /tmp/ncu . ; ls -la "$OUT" ;;
  stage68)  # run 68: stage 1 without lane masks: production-size tokens (bad rows included), graph replay,
            # then the mixes new / before alternating twice (the code before carried as .ab/old/src), the
            # γ = 3 verification at B = 32 both ways, and Nsight Compute on the new standard mix at 128 rows
    CHECK_STRATEGIES=extract timeout 200 python3 benchmarks/check_sampler_gpu.py tokens graph verify_graph 2>&1 \
        | grep -v "'what': 'env'"
    for i in 1 2; do
        echo "== new ($i)"
        timeout 100 python3 benchmarks/sampler_mix.py --rows 32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
            --mix top_p,base,heavy --budget-ms 60
        echo "== before ($i)"
        PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 100 python3 benchmarks/sampler_mix.py --rows 32,128 \
            --vocab 151936 --out "$OUT/sample_mix_before.csv" --mix top_p,base,heavy --budget-ms 60
    done
    echo "== verify new / before"
    timeout 60 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 32 --impl sonicsampler \
        --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep "^verify "
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 60 python3 benchmarks/run.py --case verify --gamma 3 \
        --vocab 151936 --rows 32 --impl sonicsampler --budget-ms 60 --out "$OUT/verify_before.csv" 2>&1 | grep "^verify "
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    mkdir -p /tmp/ncu
    timeout 120 "$NCU" --profile-from-start off --clock-control none --set full --import-source no -f \
        -o /tmp/ncu/new python3 benchmarks/profile_ncu.py sample top_p 128 > /tmp/ncu/new.log 2>&1
    "$NCU" -i /tmp/ncu/new.ncu-rep --page details > "$OUT/ncu_details.txt" 2>&1
    "$NCU" -i /tmp/ncu/new.ncu-rep --page source --csv --print-source sass > /tmp/ncu/new.sass.csv 2>&1
    python3 benchmarks/ncu_hotspots.py /tmp/ncu/new.sass.csv 40 > "$OUT/ncu_hotspots.txt" 2>&1
    gzip -c /tmp/ncu/new.sass.csv > "$OUT/ncu_sass.csv.gz"
    grep -A3 "sample_stage1\|Duration\|Registers Per\|Achieved Occ\|Spilling Requests  " "$OUT/ncu_details.txt" | head -40 ;;
  stage69)  # run 69: stage 1 in groups of 8 (new) against the fp64 reciprocals from the host alone (.ab/mid/src)
            # and the mask-free stage 1 before them (.ab/old/src), alternating; tokens, graph, verification's
            # graph; Nsight Compute on the new standard mix at 128 rows
    CHECK_STRATEGIES=extract timeout 150 python3 benchmarks/check_sampler_gpu.py tokens graph 2>&1 | grep -v "'what': 'env'"
    timeout 100 python3 benchmarks/check_sampler_gpu.py verify_graph 2>&1 | grep -v "'what': 'env'"
    for v in new mid old; do
        echo "== $v"
        pp="$PYTHONPATH"; [ "$v" != new ] && pp="$PWD/.ab/$v/src:$PYTHONPATH"
        PYTHONPATH="$pp" timeout 100 python3 benchmarks/sampler_mix.py --rows 32,128 --vocab 151936 \
            --out "$OUT/sample_mix_$v.csv" --mix top_p,base,heavy --budget-ms 60
        PYTHONPATH="$pp" timeout 60 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 32 \
            --impl sonicsampler --budget-ms 60 --out "/tmp/verify_$v.csv" 2>&1 | grep "^verify "
    done
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    mkdir -p /tmp/ncu
    timeout 120 "$NCU" --profile-from-start off --clock-control none --set full --import-source no -f \
        -o /tmp/ncu/new python3 benchmarks/profile_ncu.py sample top_p 128 > /tmp/ncu/new.log 2>&1
    "$NCU" -i /tmp/ncu/new.ncu-rep --page details > "$OUT/ncu_details.txt" 2>&1
    "$NCU" -i /tmp/ncu/new.ncu-rep --page source --csv --print-source sass 2>&1 | gzip -c > "$OUT/ncu_sass.csv.gz"
    grep "Duration\|Registers Per\|Achieved Occ\|Spilling Requests  " "$OUT/ncu_details.txt" | head -12 ;;
  tune70)   # run 70: the sampler's table retuned after stage 1 lost its lane masks (runs 68-69): a few
            # configurations at 1 / 32 / 128 rows, the table rebuilt from its sources with these replacing
            # their points, then installed
    timeout 420 python3 benchmarks/tune_sampler.py --rows 1,32,128 --out "$OUT/sample_sm90.json" --configs \
        rank/4096/16/8x8,extract/2048/16/2x8,extract/1024/8/1x8/128x0,extract/1024/8/1x8/160x0,extract/1024/8/1x8
    python3 benchmarks/tune_sampler.py --from-timings benchmarks/results/h100/run11_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run19_tune_sampler.timings.jsonl benchmarks/results/h100/run20_tune_sampler.timings.jsonl \
        benchmarks/results/h100/run26_tune_sampler.timings.jsonl benchmarks/results/h100/run38_tune_sampler.timings.jsonl \
        "$OUT/sample_sm90.json.timings.jsonl" \
        --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader), run 70" --out "$OUT/sample_sm90_table.json"
    cat "$OUT/sample_sm90_table.json" ;;
  final71)  # run 71: with the run-70 table: the sampler and verification (γ = 3) against their baselines at
            # V = 151936, every batch size
    timeout 230 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler \
        --rows 1,4,16,32,64,128 --vocab 151936 --budget-ms 80 --out "$OUT/sample.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    timeout 330 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
        --impl torch,flashinfer,flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn" ;;
  mixes72)  # run 72: the mixes of issues 4-5 at 1 / 32 / 128 rows (V = 151936), production-size verification
            # against the reference
    timeout 330 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_k,top_p,standard_logprobs,heavy,base,long_nucleus_1_in_16 --budget-ms 60
    timeout 200 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'" ;;
  logp73)   # run 73: after the logprobs changes (raw statistics unmasked, top-n scattered): production-size
            # sampler tokens with logprob rows and bad rows, graph replay, verification against the reference
            # (top-n ids) and its graph replay
    CHECK_STRATEGIES=extract timeout 260 python3 benchmarks/check_sampler_gpu.py tokens graph verify_graph 2>&1 \
        | grep -v "'what': 'env'"
    timeout 250 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'" ;;
  logp74)   # run 74: the logprobs mix against the standard one, new / before (.ab/old/src) alternating twice,
            # then where the logprobs mix's time goes: stage 1 alone, and stage 2 without its top-n code
    for i in 1 2; do
        echo "== new ($i)"
        timeout 100 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
            --mix top_p,standard_logprobs --budget-ms 50
        echo "== before ($i)"
        PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 100 python3 benchmarks/sampler_mix.py --rows 1,32,128 \
            --vocab 151936 --out "$OUT/sample_mix_before.csv" --mix top_p,standard_logprobs --budget-ms 50
    done
    timeout 90 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix top_p,standard_logprobs \
        --budget-ms 40 --out "$OUT/stages.txt"
    timeout 60 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix standard_logprobs \
        --stage2-const TOP_N=0 --budget-ms 40 --out "$OUT/stages_no_top_n.txt" ;;
  logp75)   # run 75: raw top-n re-ranked on 32-bit words: the logprobs mix new / before (.ab/old/src, the
            # code of run 74), where its time goes, then verification against the reference (top-n ids)
    echo "== new"
    timeout 150 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix standard_logprobs,top_p --budget-ms 50
    echo "== before"
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 150 python3 benchmarks/sampler_mix.py --rows 1,32,128 \
        --vocab 151936 --out "$OUT/sample_mix_before.csv" --mix standard_logprobs --budget-ms 50
    timeout 60 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix standard_logprobs \
        --budget-ms 40 --out "$OUT/stages.txt"
    timeout 200 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'" ;;
  stage77)  # run 77: stage 2 with fewer block reductions (scalars read back with the sorted candidates,
            # tuple reductions, the value search's one reduction per round) and the raw re-ranking of the
            # head: the standard and logprobs mixes new / before (.ab/old/src) alternating twice, the top-k
            # new / before, where the logprobs mix's time goes
    for i in 1 2; do
        mix_ab " ($i)" 100 --rows 1,32,128 --mix top_p,standard_logprobs --budget-ms 40
    done
    for i in 1 2; do
        timeout 40 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 --rows 1,32,128 \
            --budget-ms 40 --out "$OUT/topk.csv" 2>&1 | grep -v "^ \|Warning\|warn"
        PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 40 python3 benchmarks/run.py --case topk --impl sonicsampler \
            --vocab 151936 --rows 1,32,128 --budget-ms 40 --out "$OUT/topk_before.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    done
    timeout 60 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix top_p,standard_logprobs \
        --budget-ms 40 --out "$OUT/stages.txt" ;;
  verify77) # run 78: verification (γ = 3) new / before (.ab/old/src), the heavy mix under stage-1 register
            # caps 128 / 160 / none (the table's 128 was tuned on the standard mix), the mixes of run 77 again
            # with the value search as before
    timeout 150 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl sonicsampler --budget-ms 40 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn"
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 150 python3 benchmarks/run.py --case verify --gamma 3 \
        --vocab 151936 --rows 1,32,128 --impl sonicsampler --budget-ms 40 --out "$OUT/verify_before.csv" 2>&1 \
        | grep -v "^ \|Warning\|warn"
    timeout 200 python3 benchmarks/sampler_mix.py --rows 32,128 --vocab 151936 --out "$OUT/heavy_regs.csv" \
        --mix heavy --regs1 128,160,0,128 --budget-ms 40
    echo "== new (value search as before)"
    timeout 100 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,standard_logprobs --budget-ms 40 ;;
  checks77) # run 77c: after stage 2's changes: production-size sampler tokens (logprob and bad rows), graph
            # replay and recompiles, verification against the reference and its graph replay, top-k exactness
    CHECK_STRATEGIES=extract timeout 230 python3 benchmarks/check_sampler_gpu.py tokens graph verify_graph 2>&1 \
        | grep -v "'what': 'env'"
    timeout 200 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    CHECK_VOCABS=151936,262144 CHECK_CONFIGS= CHECK_KS=1,20,128 timeout 120 python3 benchmarks/check_topk_gpu.py exact \
        | grep -v "'what': 'env'" ;;
  final79)  # run 79: the code of runs 77-78 with the value search as before and the heavy batches' register
            # cap, against 63a710c (.ab/old/src): the standard and logprobs mixes new / before, the heavy mix
            # new, verification γ = 3 at 128 requests (what run 78 cut off)
    mix_ab "" 100 --rows 1,32,128 --mix top_p,standard_logprobs --budget-ms 40
    echo "== heavy new"
    timeout 90 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix heavy --budget-ms 40
    timeout 120 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 128,1,32 \
        --impl sonicsampler --budget-ms 40 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  logp80)   # run 80: what run 79 cut off: the logprobs mix at 32 and 128 rows against the standard one, new /
            # before (.ab/old/src, 63a710c)
    mix_ab "" 140 --rows 32,128 --mix standard_logprobs,top_p --budget-ms 40 ;;
  logp81)   # run 81: the fallback test's reductions only where the head did not settle the row: the logprobs
            # and standard mixes at 1 row, new / before (.ab/old/src, 63a710c) alternating twice
    for i in 1 2; do
        mix_ab " ($i)" 120 --rows 1 --mix standard_logprobs,top_p --budget-ms 40
    done ;;
  checks82)  # run 82: after warmup prepares the penalised batches' variants: graph replay and no recompile,
             # also once a request with penalties is admitted; verification's graph replay and against the
             # reference at every size (what run 79 cut off)
    timeout 150 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
    timeout 420 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'" ;;
  breakdown83a) # the feature breakdown (paper's figure 3) at the current code, first half: base ->
                # +temperature -> +top-k -> +top-p -> +min-p at 1 / 32 / 128 rows (three of these mixes
                # were last measured at e14a5e6)
    timeout 560 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix base,temperature,top_k,top_p,min_p --budget-ms 40 ;;
  breakdown83b) # second half: + penalties, bias and grammar -> + logprobs, the heavy mix, greedy, the
                # bounded approximation and the long-row batches
    timeout 560 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix processing,logprobs,greedy,bounded_approx,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  shared84) # run 84: long rows' passes shared by stage 2's programs (kernels/shared_sets.py): long rows among
            # standard ones against the reference, alone and under graph replay; the long-row batches against
            # the all-bounded one at 1 / 16 / 128 rows (V = 151936)
    timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
    timeout 300 python3 benchmarks/sampler_mix.py --rows 1,16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 60 ;;
  shared86) # run 86: the shared passes with one tuple reduction per chunk and the row's slot, bits, seed and
            # position posted with each pass: long rows among standard ones against the reference, alone and
            # under graph replay; the long-row batches at 16 and 32 chunks per pass, and the all-bounded one
    timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
    timeout 330 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix long_nucleus_1_in_16,long_min_p_1_in_16 --long-chunks 16,32 --budget-ms 40
    timeout 100 python3 benchmarks/sampler_mix.py --rows 1,16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16 --budget-ms 40 ;;
  help88)   # run 88: helper-only stage-2 programs (up to one per SM) for batches that may hold long rows:
            # long rows among standard ones against the reference, alone and under graph replay (bf16 16 /
            # 128 rows, fp32 32 rows); issue 5's batches at 1 / 16 / 32 / 128 rows (V = 151936), then 16 / 128
            # rows at V = 262144
    timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_fp32 2>&1 | grep -v "'what': 'env'"
    timeout 200 python3 benchmarks/sampler_mix.py --rows 1,16,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40
    timeout 150 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 262144 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  checks85) # run 85: every kind of long set against the reference (bf16, fp32; sampler and verification), fp32
            # long rows shared among standard ones, the exact paths' statistics at 1e5 draws, then the
            # all-bounded batch new / before (.ab/old/src)
    timeout 300 python3 benchmarks/check_sampler_gpu.py long long_shared_fp32 2>&1 | grep -v "'what': 'env'"
    timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py -k "draws_of_the_exact" 2>&1 | tail -3
    mix_ab "" 80 --rows 1,32,128 --mix top_p --budget-ms 40 ;;
  helpers90) # run 90: stage 2's SHARED variant (compiled only for batches that may hold long rows) with
            # helper-only programs for batches of fewer rows than chunks: long rows among standard ones
            # against the reference, alone (now with helpers) and under graph replay; then issue 5's batches
            # and the may-but-do-not batch (top-p without top-k, nuclei within the bound) at 1 / 16 / 128 rows
    timeout 250 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_fp32 2>&1 | grep -v "'what': 'env'"
    timeout 320 python3 benchmarks/sampler_mix.py --rows 1,16,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,top_p_no_k,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  ab91)     # run 91: the same batches on the code before (.ab/old/src), then on the tree again, in one call
    mix_ab "" 280 --rows 1,16,128 --mix top_p,top_p_no_k,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  ab92)     # run 92: helpers compiled only into the variant that launches them; the checks of run 90 (bf16),
            # then issue 5's batches and the may-but-do-not batch before (.ab/old/src) and after
    timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 190 --rows 1,16,128 --mix top_p,top_p_no_k,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  regs93)   # run 93: stage 2's register cap at 32 / 128 rows (the table has none; ptxas then picks 128 registers
            # and spills 120 bytes in the non-shared variant's local compile), then the all-bounded batch A/B
    timeout 250 python3 benchmarks/sampler_mix.py --rows 32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,top_p_no_k --regs2 0,255,0,255 --budget-ms 40 ;;
  checks94) # run 94: graph replay equals eager, and nothing compiles over 1..32 rows after warm-up, for plain,
            # penalised and shared batches (warm-up now prepares stage 2's SHARED variants); fp32 long rows
            # shared among standard ones
    timeout 380 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'"
    timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared_fp32 2>&1 | grep -v "'what': 'env'" ;;
  ab95)     # run 95: the final code against 4b90c93 (.ab/old/src): issue 5's batches and the standard one,
            # then verification (γ = 3; stage 2's register cap applies to it too)
    mix_ab "" 200 --rows 1,16,128 --mix top_p,top_p_no_k,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40
    verify_ab 90 1,32,128 ;;
  verify96) # run 96: verification (γ = 3) at 32 / 128 requests, the final code against 4b90c93: what run 95 cut off
    verify_ab 250 32,128 ;;
  ab97)     # run 97: DONE without a fence and a lone row that skips the board, against c3e2752 (.ab/old/src):
            # the standard and the may-but-do-not batch at 1 / 16 rows, alternating twice; a lone long nucleus;
            # then the first half of the feature breakdown (base .. min-p) at 1 / 32 / 128 rows
    mix_ab " 1" 150 --rows 1,16 --mix top_p,top_p_no_k --budget-ms 40
    mix_ab " 2" 60 --rows 1,16 --mix top_p,top_p_no_k --budget-ms 40
    timeout 60 python3 benchmarks/sampler_mix.py --rows 1 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40
    timeout 260 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix base,temperature,top_k,top_p,min_p --budget-ms 40 ;;
  ab98)     # run 98: raw top-n of processed rows through bare launches and one fill kernel: production-size tokens
            # (top-n ids against the reference), then processing with and without top-20 raw logprobs, GPU
            # and host time, against 7bcc802 (.ab/old/src)
    CHECK_STRATEGIES=rank timeout 250 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 160 --rows 1,32 --mix processing,logprobs --budget-ms 40 ;;
  host104)  # run 104: verification's stage 1 reads the requests' slots and positions (no per-row tensors, no fill of
            # the draft counts): verification against the reference and its graph replay, the γ = 3 line against
            # the snapshot (graph replay, GPU time), then the eager host time
    timeout 270 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    verify_ab 110 1,32
    timeout 60 python3 benchmarks/verify_host.py 1 32 ;;
  host103)  # run 103: verification's launches through launch.Launcher (Triton's runner before): verification against
            # the reference at production sizes and its graph replay, then eager host time against the snapshot
    timeout 330 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    echo "== new"; timeout 100 python3 benchmarks/verify_host.py 1 32
    echo "== before"; PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 100 python3 benchmarks/verify_host.py 1 32 ;;
  host102)  # run 102: host time of an eager call (one allocation per output, launches given only their changing
            # arguments, whole-batch checks of host slots and positions, one copy for both): production-size
            # tokens, graph replay and the late-admission graph check, then the standard mix against the snapshot
    CHECK_STRATEGIES=extract timeout 260 python3 benchmarks/check_sampler_gpu.py tokens graph graph_late_long 2>&1 \
        | grep -v "'what': 'env'"
    mix_ab "" 150 --rows 1,32,128 --mix top_p --budget-ms 30 ;;
  div101)   # run 101: the division by a row's temperature / repetition penalty in fp32 FMAs (SONICSAMPLER_DIV_FP32=1,
            # a timing experiment) against the fp64 product, alternating, then verification γ = 3 at 32 requests
    for r in 1 2; do
        echo "== fp64 $r"; timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 32,128 --mix top_p \
            --budget-ms 40 --out "$OUT/sample_mix_fp64.csv"
        echo "== fp32 $r"; SONICSAMPLER_DIV_FP32=1 timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 \
            --rows 32,128 --mix top_p --budget-ms 40 --out "$OUT/sample_mix_fp32.csv"
    done
    for env in 0 1; do
        echo "== verify fp32=$env"; SONICSAMPLER_DIV_FP32=$env timeout 80 python3 benchmarks/run.py --case verify --gamma 3 \
            --vocab 151936 --rows 32 --impl sonicsampler --budget-ms 60 --out "$OUT/verify_$env.csv" 2>&1 \
            | grep -v "^ \|Warning\|warn"
    done ;;
  checks105) # run 105: top-p cuts' searches start from the key range their candidates bound
            # (long_rows.nucleus_start): long top-p cuts on rows of values around 10 (bf16, fp32; sampler and
            # verification, with the passes taken), long rows shared among standard ones, the late-long graph
    timeout 400 python3 benchmarks/check_sampler_gpu.py narrow_cuts long_shared graph_late_long 2>&1 \
        | grep -v "'what': 'env'" ;;
  narrow105) # run 105b: what checks105's step limit cut off (after 3 minutes of compiles for graph_late_long):
             # narrowed top-p cuts, bf16 and fp32, sampler and verification, with the passes taken
    timeout 430 python3 benchmarks/check_sampler_gpu.py narrow_cuts 2>&1 | grep -v "'what': 'env'" ;;
  narrow107) # run 107c: top-p cuts after a top-k search start at the top-k cut's key (nucleus_after_top_k): the
             # narrowed cuts at production size again (expected passes 3 / 7 / 3 / 3 in bf16, 7 / 15 or fewer in fp32)
    timeout 430 python3 benchmarks/check_sampler_gpu.py narrow_cuts 2>&1 | grep -v "'what': 'env'" ;;
  counts109c) # run 109c: the count atomics relaxed (REDG, no fence: each had a MEMBAR.ALL.GPU and an L1
              # invalidation, and run 109b's second one cost the standard mix 0.3-0.8 µs): penalised steps against the
              # reference at 32 / 128 rows, then the heavy and standard mixes against the code before (.ab/old/src)
    timeout 120 python3 benchmarks/check_sampler_gpu.py penalty_steps 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 200 --rows 1,32,128 --mix heavy,top_p --budget-ms 30 ;;
  vwarm115) # run 115: Sampler.warmup_verify (one-hot drafts, γ = 3, 1..2 requests), then real verifications: no compile
    timeout 200 python3 benchmarks/check_sampler_gpu.py verify_warmup 2>&1 | grep -v "'what': 'env'" ;;
  direct116) # run 116 (its code is gone: commit f2bfc49 has direct_launch.py, host_ab.py and
             # check_direct_launch_gpu.py): launches through direct_launch.DirectLaunch (the parameter block kept in C memory)
             # against Triton's C launcher: eager host time alternating in one process (sampler standard mix
             # fresh and out=, verification), twin samplers' outputs bitwise equal at production size
             # (sampler, drafts, out=, graph, verification's three draft kinds, top-k), the standard mix's
             # graph times (should not move: 18.2 / 27.8 / 62.8 µs in run 110)
    timeout 150 python3 benchmarks/host_ab.py --rows 1,32,128 --verify 1,32 --rounds 2
    timeout 300 python3 benchmarks/check_direct_launch_gpu.py 2>&1 | grep -v "'what': 'env'"
    timeout 100 python3 benchmarks/sampler_mix.py --rows 1,32,128 --mix top_p --budget-ms 20 --out "$OUT/sample_mix.csv" ;;
  launch117) # run 117 (run with commit f2bfc49's code): what a launch costs the host, taken apart
             # (benchmarks/launch_cost.py: tiny kernels of 2 and 80 parameters, the sampler's stage 1; Triton's
             # runner, its C launch, the direct launch (since removed), with
             # and without the PDL attribute, default and created stream), then run 116's check again (its graph
             # check was wrong: one twin sampled a step more; verification was cut off by the step's limit)
    timeout 200 python3 benchmarks/launch_cost.py
    timeout 380 python3 benchmarks/check_direct_launch_gpu.py 2>&1 | grep -v "'what': 'env'" ;;
  admit119) # run 119: admission without waiting for the GPU (pinned copies, fills), its rows right; production-
            # size tokens at V = 32000 after session 21's input checks; graph replay and no recompile after warmup
    timeout 200 python3 benchmarks/check_sampler_gpu.py admission_async tokens_small 2>&1 | grep -v "'what': 'env'" ;;
  checks125) # run 125: the kept checks compare addresses too (session 22's review): out= / graph / warm-up checks of
             # sample and verify, production-size tokens, and the host time against .ab/old/src (55b250b's)
    rm -rf .ab/pkg && mkdir -p .ab/pkg && cp -r .ab/old/src/sonicsampler .ab/pkg/sonicsampler_old
    timeout 200 python3 benchmarks/check_sampler_gpu.py out_buffers graph verify_out_buffers 2>&1 | grep -v "'what': 'env'"
    CHECK_STRATEGIES=extract timeout 100 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 120 python3 benchmarks/host_ab.py --old .ab/pkg --rows 1,128
    timeout 100 python3 benchmarks/host_ab.py --old .ab/pkg --verify 1 ;;
  vhost123) # run 123: verification's lean eager path (checks of the same device slots / positions and out= kept, draft
            # ids used as given when int64 and contiguous, addresses read once) against .ab/old/src (68a8182's) in
            # one process; the sampler's 1-row host time too; verification against the reference at production size,
            # verify(out=) eager and in a graph; verification's GPU time (should not move)
    rm -rf .ab/pkg && mkdir -p .ab/pkg && cp -r .ab/old/src/sonicsampler .ab/pkg/sonicsampler_old
    timeout 150 python3 benchmarks/host_ab.py --old .ab/pkg --verify 1,32
    timeout 60 python3 benchmarks/host_ab.py --old .ab/pkg --rows 1
    timeout 200 python3 benchmarks/check_sampler_gpu.py verify verify_out_buffers 2>&1 | grep -v "'what': 'env'"
    timeout 90 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32,128 \
        --impl sonicsampler --budget-ms 40 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  admit122) # run 122: admissions write scalars with fill_ (an element assignment waited ~30 ms behind queued work,
            # run 121's probes) and outputs come from new_empty, against .ab/old/src (1490b70's) in one process;
            # admission behind busy work; production-size tokens and out= / graph checks again
    rm -rf .ab/pkg && mkdir -p .ab/pkg && cp -r .ab/old/src/sonicsampler .ab/pkg/sonicsampler_old
    timeout 60 python3 benchmarks/admission_time.py
    timeout 150 python3 benchmarks/host_ab.py --old .ab/pkg --rows 1,32,128
    timeout 60 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,128
    timeout 200 python3 benchmarks/check_sampler_gpu.py out_buffers graph 2>&1 | grep -v "'what': 'env'"
    CHECK_STRATEGIES=extract timeout 100 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'" ;;
  greedy128c) # run 128c: the scalar argmax path read from the keys (stage 1 without extra spills on the common
              # path) and its fp16 edge walked in stage 2: the standard, heavy and greedy mixes against the code
              # before (.ab/old/src), greedy rows at production size against the reference, the standard and
              # heavy mixes again
    mix_ab " 1" 140 --rows 1,32,128 --mix top_p,heavy,greedy --budget-ms 20
    timeout 150 python3 benchmarks/check_sampler_gpu.py greedy graph 2>&1 | grep -v "'what': 'env'"
    mix_ab " 2" 70 --rows 1,32,128 --mix top_p,heavy --budget-ms 20 ;;
  greedy128e) # run 128e: what run 128c cut off (the heavy and greedy mixes against .ab/old/src, alternating), then
              # greedy rows in fp32 / fp16 and out=
    mix_ab " 1" 100 --rows 1,32,128 --mix heavy,greedy --budget-ms 20
    mix_ab " 2" 70 --rows 1,32,128 --mix heavy,greedy --budget-ms 20
    timeout 200 python3 benchmarks/check_sampler_gpu.py greedy_dtypes out_buffers 2>&1 | grep -v "'what': 'env'" ;;
  greedy128i) # run 128i: greedy rows at the 1-row configuration (rank strategy: 1-D 16-bit keys), bf16 and fp16
    timeout 200 python3 benchmarks/check_sampler_gpu.py greedy_one_row 2>&1 | grep -v "'what': 'env'" ;;
  greedy128h) # run 128h: what run 128g cut off: the heavy mix against .ab/old/src (alternating twice), greedy rows
              # against the reference (bf16, fp32, fp16), out=
    mix_ab " 1" 80 --rows 1,32,128 --mix heavy --budget-ms 20
    mix_ab " 2" 80 --rows 1,32,128 --mix heavy --budget-ms 20
    timeout 200 python3 benchmarks/check_sampler_gpu.py greedy greedy_dtypes out_buffers 2>&1 | grep -v "'what': 'env'" ;;
  raw129)   # run 129: stage 1 ranks raw values for rows whose processing is at most a temperature (stage 2 not
            # yet remapping their keys: a timing of stage 1's change alone, tokens not checked): the
            # standard, top-k and greedy mixes against the code before (.ab/old/src), alternating twice
    mix_ab " 1" 150 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    mix_ab " 2" 100 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    verify_ab 100 32,128 ;;
  raw129b)  # run 129b (ee2ed21^^: stage 2 remapped every tile list): rows ranked on raw keys against the reference,
            # then the mixes against the code before (.ab/old/src), one alternation
    timeout 260 python3 benchmarks/check_sampler_gpu.py raw_keys verify graph 2>&1 | grep -v "'what': 'env'"
    mix_ab " 1" 150 --rows 1,32,128 --mix top_p,top_k,min_p,standard_logprobs,top_p_no_k --budget-ms 20 ;;
  raw129c)  # run 129c: each tile turns only its emitted keys into quotients' keys (stage 2 as before): the
            # standard, top-k and greedy mixes against the code before (.ab/old/src) twice, verification once
    mix_ab " 1" 150 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    mix_ab " 2" 100 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    verify_ab 100 1,32,128 ;;
  raw129e)  # run 129e: stage 1 alone and the whole call (profile_sampler_stages.py) for the tree, the code before
            # (.ab/old), and two diagnostic variants of the tree: its tiles' quotients not sorted again
            # (.ab/var1: wrong where quotients tie) and no quotients at all (.ab/var2: wrong ranks)
    for v in "" old var1 var2; do
        echo "== stages ${v:-new}"
        PYTHONPATH="${v:+$PWD/.ab/$v/src:}$PYTHONPATH" timeout 130 python3 benchmarks/profile_sampler_stages.py \
            --rows 1,32,128 --mix top_p --budget-ms 20 2>&1 | grep -v "^ \|Warning\|warn"
    done ;;
  raw129f)  # run 129f: the inverse temperature loaded once, the quotients stored at their ranks, stage 2's refill
            # filtered by the tile's list: stage 1 alone and the whole call, then the mixes and verification
            # against the code before (.ab/old/src)
    for v in "" old; do
        echo "== stages ${v:-new}"
        PYTHONPATH="${v:+$PWD/.ab/$v/src:}$PYTHONPATH" timeout 100 python3 benchmarks/profile_sampler_stages.py \
            --rows 1,32,128 --mix top_p --budget-ms 20 2>&1 | grep -v "^ \|Warning\|warn"
    done
    mix_ab " 1" 100 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    mix_ab " 2" 80 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    verify_ab 90 1,32,128 ;;
  raw129g)  # run 129g: is stage 2's +1.7 us at 128 rows (runs 129e-f) its refill code? The tree (ee2ed21's kernels),
            # .ab/varA (the same stage 1, stage 2 without the remapped rows' refill code) and the code before
    for v in "" varA old; do
        echo "== stages ${v:-new}"
        PYTHONPATH="${v:+$PWD/.ab/$v/src:}$PYTHONPATH" timeout 100 python3 benchmarks/profile_sampler_stages.py \
            --rows 1,32,128 --mix top_p,greedy --budget-ms 20 2>&1 | grep -v "^ \|Warning\|warn"
    done ;;
  raw129h)  # run 129h, the kept version (ee2ed21's stage 1, stage 2's refill filtered by the tile's list, no raw keys
            # with the rank strategy): rows ranked on raw keys against the reference, verification, graph replay
            # and compile count; the mixes and verification against the code before (.ab/old/src)
    CHECK_RAW="151936:32 151936:128 262144:8" timeout 230 python3 benchmarks/check_sampler_gpu.py \
        raw_keys verify graph 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 100 --rows 1,32,128 --mix top_p,top_k,greedy --budget-ms 20
    verify_ab 90 32,128 ;;
  wide201)  # run 201 (session 35, branch wide at 0d6d6b0, merged) run 200's tree with wide passes off in 1-row launches (WIDE_PASSES): long rows
            # among 16 / 128 standard ones against the reference, bitwise alone (the lone rows' launches now narrow),
            # graph equal to eager (processed, raw); every kind of long set; the long and mid nuclei and all bounded at
            # 1 / 16 / 128 rows against .ab/main/src; into $OUT/run201.log
    { timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      mix_variants wide 170 "- main" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p \
          --budget-ms 10; } 2>&1 | tee "$OUT/run201.log" | tail -30 ;;
  wide200)  # run 200 (session 35, branch wide at 43a7bc6) run 198's wide passes with three cuts to their chain (run 199's timeline): the
            # window in closed form, the wide words of the row's totals kept zero between launches (not zeroed
            # before the post), the early draw's loads issued before the wide step: long rows among 16 / 128
            # standard ones against the reference, bitwise alone, graph equal to eager (processed, raw); the long and
            # mid nuclei and all bounded at 1 / 16 rows against .ab/main/src; into $OUT/run200.log
    { timeout 120 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants wide 150 "- main" --rows 1,16 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run200.log" | tail -30 ;;
  wide198)  # run 198 (session 35, branch wide at 5275a84) run 197's wide passes, the pass posted before the candidates wide too
            # (over the window from the full normalizer's bound to the row's maximum): long rows among 16 / 128
            # standard ones against the reference, bitwise alone and graph equal to eager, processed and raw;
            # every kind of long set (bf16, fp32); the long and mid nuclei and all bounded at 1 / 16 / 128 rows
            # against .ab/main/src; into $OUT/run198.log
    { timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 \
          | grep -v "'what': 'env'"
      mix_variants wide 165 "- main" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run198.log" | tail -30 ;;
  wide197)  # run 197 (session 35, branch wide at d8ae62b; its wide variant ran out of time after the long nuclei) a wide first top-p pass (2048 intervals of one key over the window the
            # candidates bound, the magnitudes nearest zero in one) in launches of at most 16 rows: long rows among
            # 16 / 128 standard ones against the reference, bitwise alone (a 1-row launch: wide) and graph equal to
            # eager, processed and raw; narrowed cuts; every kind of long set (bf16, fp32); the long, processed-
            # logprob and mid nuclei and all bounded at 1 / 16 / 128 rows against .ab/main/src; into $OUT/run197.log
    { timeout 230 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw narrow_cuts long 2>&1 \
          | grep -v "'what': 'env'"
      mix_variants wide 150 "- main" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,long_nucleus_1_in_16_lp,mid_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run197.log" | tail -30 ;;
  handover196) # run 196 (session 35, branch handover; ownwait merged into it after) a shorter hand-over of each shared pass: the claim counts live in the
            # row's state word (one load tells a helper what is posted and left; its claim is the post's acquire),
            # the owner stops claiming once its pass's chunks are all taken, and a chunk's first logits load is
            # issued before the branch on its parameters: long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager; the long and mid nuclei and all bounded at 1 / 16 /
            # 128 rows against .ab/main/src (main's src) and .ab/ownwait/src (an owner whose pass is all taken
            # helps no other row meanwhile); into $OUT/run196.log
    { timeout 110 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants handover 140 "- main ownwait" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run196.log" | tail -30 ;;
  ceil208b) # run 208 (session 36, the device budget's last ~200 s) the tree against .ab/main/src (6c1712c's) for top-p without
            # top-k (bounded pure nuclei, which now evaluate nucleus_beyond's second bound before their candidates) and the
            # long nucleus at 1 / 16 rows; into $OUT/run208.log
    { mix_variants ceil 80 "- main" --rows 1,16 --mix top_p_no_k,long_nucleus_1_in_16 --budget-ms 10; } 2>&1 \
        | tee "$OUT/run208.log" | tail -12 ;;
  stages252) # (written in session 42, not run) run 249: at V = 32768 and 1 row, 512-token tiles emitting 8 took 12.8
            # µs and 1024 / 16 16.5, though stage 2 merges 512 candidates in both (the table has 512 / 8 since
            # cfbddb2). Which stage gains: each
            # configuration's call and its stage 1 alone (benchmarks/profile_sampler_stages.py --configs), at 1 and
            # 64 rows, and at V = 151936 the table's 1-row point against 1024 / 8 and 2048 / 8 with one warp; into
            # $OUT/run252*
    { timeout 200 python3 benchmarks/profile_sampler_stages.py --vocab 32768 --rows 1,64 --mix top_p \
          --configs table,1024/16/1/8/extract,512/16/1/8/extract --out "$OUT/run252_32k.txt"
      timeout 200 python3 benchmarks/profile_sampler_stages.py --vocab 151936 --rows 1 --mix top_p \
          --configs table,1024/8/1/8/extract,2048/8/1/8/extract,2048/8/2/8/extract --out "$OUT/run252_152k.txt"
      } 2>&1 | tee "$OUT/run252.log" | tail -30 ;;
  tune251)  # (written in session 42, not run) run 246: the top-k at V = 262144 took 15.7 µs at 4 rows against 11.4 at
            # 1, and the table (runs 17-18, 55) was tuned on much older code. The extract strategy's tiles of 1024 /
            # 2048 / 4096, emit 8 / 16, one or two warps, at V = 262144 and 1-128 rows on the current code (the
            # tuner leaves out configurations past refill_risk); timings only, into $OUT/run251_tune_topk.json*
    { timeout 520 python3 benchmarks/tune_topk.py --vocabs 262144 --rows 1,4,16,32,64,128 --blocks 1024,2048,4096 \
          --emits 8,16 --warps1 1,2 --strategies extract --out "$OUT/run251_tune_topk.json" 2>&1 | tail -30
      } 2>&1 | tee "$OUT/run251.log" | tail -40 ;;
  small250) # (written in session 42, not run) run 249 put 512-token tiles emitting 8 into the sampler table for V =
            # 32768 (timed at 1 / 64 / 128 rows only). Their production-size exactness (tokens at V = 32768 / 32000 at
            # 1 / 4 / 64 / 128 / 300 rows, bad rows included; verification at 64 and 256 target rows); the standard mix
            # at 4 / 16 / 32 rows under the table against run 248's configuration there (1024 / 16 with its caps,
            # 128 x 255); and the vocabularies the V = 32768 bucket now also serves (50257, 65536) under the table
            # against what they took before (1024 / 16 above 1 row, 4096 / 32 rank at 1); into $OUT/run250*
    { timeout 250 python3 benchmarks/check_sampler_gpu.py tokens_32k 2>&1 | grep -v "'what': 'env'"
      timeout 130 python3 benchmarks/sample_config_probe.py --vocab 32768 --rows 4,16,32 \
          --configs table,1024/16/1/8/extract/128x255 --out "$OUT/run250_config.csv"
      for rc in "1 4096/32/8/8/rank/0x0" "32 1024/16/1/8/extract/128x255" "128 1024/16/1/8/extract/96x255"; do
        timeout 60 python3 benchmarks/sample_config_probe.py --vocab 50257,65536 --rows "${rc%% *}" --configs "table,${rc#* }" \
            --out "$OUT/run250_config.csv"
      done
      } 2>&1 | tee "$OUT/run250.log" | tail -60 ;;
  small253) # (written in session 42, not run) after small250: the sampler and verification (γ = 3) against FlashInfer
            # at V = 32768 on the table's V = 32768 entries, each in one run (run 248's comparison, then on the
            # table of V = 151936's entries); carry .whl; into $OUT/run253*
    { timeout 200 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,sonicsampler \
          --rows 1,4,16,32,64,128 --vocab 32768 --budget-ms 50 --out "$OUT/run253_sample.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      timeout 250 python3 benchmarks/run.py --case verify --gamma 3 --vocab 32768 --rows 1,4,16,32,64,128 \
          --impl torch,flashinfer.k_only,sonicsampler --budget-ms 50 --out "$OUT/run253_verify.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      } 2>&1 | tee "$OUT/run253.log" | tail -60 ;;
  cfg249)   # (session 42) run 248: the sampler at V = 32768 took 23.6 µs at 1 row against 16.5 at 4 (the table's 1-row
            # entry fitted to V = 32768: 8 tiles of 4096 emitting 64). The standard mix at V = 32768, 1 / 64 / 128 rows,
            # under the table and two explicit configurations (benchmarks/sample_config_probe.py); into $OUT/run249*
    { timeout 200 python3 benchmarks/sample_config_probe.py --vocab 32768 --rows 1,64,128 \
          --configs table,1024/16/1/8/extract,512/8/1/8/extract --out "$OUT/run249_config.csv"
      } 2>&1 | tee "$OUT/run249.log" | tail -30 ;;
  grid248)  # (session 42) the rest of issue 4's grid and part of issue 6's on the current code: the sampler (standard
            # mix) against torch and FlashInfer's best path (softmax + top_k_top_p_sampling_from_probs) at V = 32768 /
            # 131072 / 262144, then verification (γ = 3) against torch and issue 6's FlashInfer chain at V = 32768 /
            # 262144, B = 1-128; carry .whl; into $OUT/run248*
    { timeout 330 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,sonicsampler \
          --rows 1,4,16,32,64,128 --vocab 32768,131072,262144 --budget-ms 50 --out "$OUT/run248_sample.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      timeout 300 python3 benchmarks/run.py --case verify --gamma 3 --vocab 32768,262144 --rows 1,4,16,32,64,128 \
          --impl torch,flashinfer.k_only,sonicsampler --budget-ms 50 --out "$OUT/run248_verify.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      } 2>&1 | tee "$OUT/run248.log" | tail -90 ;;
  grid246)  # (session 42) the baseline comparisons again on the current code, each in one run: the top-k against
            # torch.topk and FlashInfer's top_k over issue 3's grid (V = 32768 / 131072 / 151936 / 262144, 1-128 rows;
            # the README's full table was run 19's), then the sampler (standard mix) against torch and FlashInfer's
            # two paths at V = 151936 (run 71's); carry .whl; into $OUT/run246*
    { timeout 250 python3 benchmarks/run.py --case topk --impl torch.topk,flashinfer.top_k,sonicsampler \
          --vocab 32768,131072,151936,262144 --rows 1,4,16,32,64,128 --budget-ms 60 --out "$OUT/run246_topk.csv" \
          2>&1 | grep -v "^ \|Warning\|warn"
      timeout 270 python3 benchmarks/run.py --case sample --impl torch,flashinfer.probs,flashinfer.logits,sonicsampler \
          --rows 1,4,16,32,64,128 --vocab 151936 --budget-ms 60 --out "$OUT/run246_sample.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      } 2>&1 | tee "$OUT/run246.log" | tail -90 ;;
  grid247)  # (session 42) verification (γ = 3, one-hot drafts) against torch and FlashInfer's chain (with and without
            # its top-k renormalisation) at V = 151936, B = 1-128 (run 71's), on the current code; carry .whl; into
            # $OUT/run247*
    { timeout 400 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,4,16,32,64,128 \
          --impl torch,flashinfer,flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/run247_verify.csv" 2>&1 \
          | grep -v "^ \|Warning\|warn"
      } 2>&1 | tee "$OUT/run247.log" | tail -60 ;;
  loop245)  # (written in session 41, not run) run 241's source view: in the long passes' sub-tile loop (1 217 SASS
            # instructions, ~475 executed per warp and sub-tile) a third to a half of the stalls are instruction fetch
            # (no_instruction 35% / 45% in the helpers' / rows' copy). .ab/loopsplit: chunk_pass with one loop per
            # kind of pass (benchmarks/variants/loopsplit.patch: 942 / 1 102 instructions); .ab/loopplain: also one per
            # kind of row, plain rows' loops without the penalties' and bias's code (loopplain.patch: 673-677 / 792-818);
            # .ab/looplean: loopplain, and a trivial cut neither compares nor scans, a wide pass computes only its own
            # interval (looplean.patch: 651-655 / 761). Each made by `mkdir -p .ab/NAME && git archive HEAD src | tar -x
            # -C .ab/NAME && git apply --directory=.ab/NAME benchmarks/variants/NAME.patch`, carried. The tree against
            # the three, the long nucleus 1 in 16 at 16 / 64 / 128 rows; all bounded at 1 / 128 against looplean;
            # looplean's long rows against the reference (sampler, and verification's own passes, bf16 and fp32);
            # into $OUT/run245*
    { mix_variants tree 300 "- loopsplit loopplain looplean" --rows 16,64,128 --mix long_nucleus_1_in_16 --budget-ms 10
      mix_variants tree 100 "- looplean" --rows 1,128 --mix top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/looplean/src:$PYTHONPATH" timeout 120 python3 benchmarks/check_sampler_gpu.py long_shared long \
          2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run245.log" | tail -80 ;;
  fill244)  # (written in session 41, not run) run 242 read again: "done released" is a program's LAST release of the
            # pass, and most programs run two of the first pass's 256 chunks at 64 rows, so there is no ~9 µs drain of
            # atomics; a chunk is ~7 µs of work, and the rows' programs join only after their merges (~15 µs), so the
            # chunks they take last end ~9 µs after the helpers' (ends 24.2 / med 28.5 / 33.4). .ab/fill2x: the tree
            # with benchmarks/variants/fill2x.patch (long_fill's launches take up to two chunks per helper: 128 at 32 /
            # 64 rows, 64 at 96), made by `mkdir -p .ab/fill2x && git archive HEAD src | tar -x -C .ab/fill2x && git
            # apply --directory=.ab/fill2x benchmarks/variants/fill2x.patch`, and .ab/trace_fill2x by
            # `python benchmarks/make_trace_snapshot.py .ab/trace_fill2x .ab/fill2x/src`, both carried. The tree against
            # fill2x, the long nucleus 1 in 16 and all bounded at 32 / 64 / 96 rows; fill2x's long rows against the
            # reference at 32 / 64 rows; fill2x's timeline at 64 rows; into $OUT/run244*
    { mix_variants tree 200 "- fill2x" --rows 32,64,96 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/fill2x/src:$PYTHONPATH" timeout 80 python3 benchmarks/check_sampler_gpu.py long_shared_mid \
          2>&1 | grep -v "'what': 'env'"
      PYTHONPATH="$PWD/.ab/trace_fill2x/src:$PYTHONPATH" timeout 100 python3 benchmarks/trace_long_passes.py --rows 64 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run244_trace_fill2x.txt" > /dev/null
      cat "$OUT/run244_trace_fill2x.txt"
      } 2>&1 | tee "$OUT/run244.log" | tail -80 ;;
  fold243)  # (session 41) run 242: a chunk's release of its done count came ~9 µs after its fold was issued, with or
            # without the shared-memory sums, while its pass took ~7: the 64 chunks of a pass fold into the same row
            # words. Now FOLD_COPIES (4) copies, chunk c into c % 4, added up by the owner. The tree against .ab/base
            # (the tree before, carried): the long nucleus 1 in 16 and all bounded at 32 / 64 / 128 rows; long rows
            # among 32 / 64 standard ones against the reference; into $OUT/run243*
    { mix_variants fold 110 "- base" --rows 32,64,128 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 80 python3 benchmarks/check_sampler_gpu.py long_shared_mid 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run243.log" | tail -60 ;;
  trace242) # (session 41) where a 64-row long nucleus's passes spend their time with and without the shared-memory sums
            # (run 240: no faster at 32 / 64 rows, though its per-token adds cost a third of the L2's atomics, run 239):
            # stamped timelines of the long nucleus 1 in 16 at 64 rows, V = 151936 (long_fill), from .ab/trace_base
            # (the tree) and .ab/trace_smem (the tree with benchmarks/variants/smem_sums.patch), both made by
            # make_trace_snapshot.py and carried; into $OUT/run242_trace_*.txt
    { for v in base smem; do
        PYTHONPATH="$PWD/.ab/trace_$v/src:$PYTHONPATH" timeout 170 python3 benchmarks/trace_long_passes.py --rows 64 \
            --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run242_trace_$v.txt" > /dev/null
        cat "$OUT/run242_trace_$v.txt"
      done
      } 2>&1 | tee "$OUT/run242.log" | tail -150 ;;
  ncu241)   # (session 41) run 240: with the search sums in shared memory (3-4x cheaper than the L2's atomics alone, run
            # 239) the long nucleus 1 in 16 at 32 / 64 rows got no faster, so per-token atomics are not what holds a
            # chunk's ~5 µs pass. Where its time goes: Nsight Compute's source view of the tree's stage 2 at 64 rows
            # (long_fill: 4 long rows, 64 chunks), and all bounded at 128 rows (ncusrc235's question: where the
            # instruction-fetch stalls fall); into $OUT/ncu_*
    ncu_source 230 80 "sample long_nucleus_1_in_16 64" "sample top_p 128" ;;
  smem240)  # (session 41) the search passes' sums in shared memory (long_rows.smem_add: three 14-bit limbs per token,
            # native 32-bit shared adds, stored once per chunk; run 239) against .ab/base (the tree before it, carried):
            # the long nucleus 1 in 16 and all bounded at 1 / 16 / 32 / 64 / 128 rows; then long rows against the
            # reference (the sampler's shared passes at 16 / 32 / 64 / 128 rows, verification's own passes), and with
            # stage 2 at 4 warps (32 KiB of dynamic shared memory: launch.allow_static_shared's opt-in); into $OUT/run240*
    { mix_variants smem 260 "- base" --rows 1,16,32,64,128 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_mid long 2>&1 | grep -v "'what': 'env'"
      CHECK_WARPS=4,4 timeout 80 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run240.log" | tail -60 ;;
  smem239)  # (session 41) run 237 put the passes' per-token 64-bit atomics at the L2's total rate (~85 per ns):
            # can each chunk's sums go to shared memory (a static .shared array by inline PTX) and be stored once?
            # benchmarks/smem_hist_probe.py: global red against shared 64-bit adds, three 32-bit limbs, 32-bit counts,
            # each checked against the global form; into $OUT/run239_smem.jsonl
    timeout 200 python3 benchmarks/smem_hist_probe.py --out "$OUT/run239_smem.jsonl" 2>&1 | tee "$OUT/run239.log" | tail -80 ;;
  rowshare238) # (written in session 40, not run yet) .ab/rowshare: the tree with benchmarks/variants/rowshare.patch (a
            # row's part in the shared passes, nucleus_start and shared_long_set, as one noinline call), made by
            # `mkdir -p .ab/rowshare && git archive HEAD src | tar -x -C .ab/rowshare && git apply --directory=.ab/rowshare
            # benchmarks/variants/rowshare.patch` and carried. Its sm_90 compile of the 1-row graph launch's stage 2
            # (compile_launches standard1_graph) has a kernel body of ~5 700 instructions with 79 spill instructions,
            # against ~10 500 and 182: the passes' code out of the bounded rows' way (run 234: instruction fetch is
            # stage 2's largest stall). Run 146 put shared_long_set out of line while the helpers' path was inlined:
            # 1 row -0.3 µs, 32 / 128 rows +0.3 / +0.5, a lone long nucleus +4.7. The tree against rowshare, all
            # bounded and the long nucleus 1 in 16 at 1 / 16 / 64 / 128 rows; rowshare's long rows against the
            # reference; into $OUT/run238*
    { mix_variants rowshare 200 "- rowshare" --rows 1,16,64,128 --mix top_p,long_nucleus_1_in_16 --budget-ms 10
      PYTHONPATH="$PWD/.ab/rowshare/src:$PYTHONPATH" timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared long \
          2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run238.log" | tail -60 ;;
  probe237) # (written in session 40, not run yet) the atomics alone, graph-timed (benchmarks/atomics_probe.py; run 189
            # timed eager launches whose launch time hid everything below ~20 µs): is the L2's total rate of 64-bit
            # atomics what held run 229's chunks (~9 µs from a chunk's fold issued to its done count released, at
            # 64 rows with long_fill)? Per-token atomics into per-chunk words, spread (low byte, wide) and hot (top
            # byte, same word), at 128 x 1, 16 x 9, 128 x 9 and 256 x 2 programs x sub-tiles, against the loads
            # alone; into $OUT/run237_atomics.jsonl
    timeout 300 python3 benchmarks/atomics_probe.py --out "$OUT/run237_atomics.jsonl" 2>&1 | tee "$OUT/run237.log" | tail -60 ;;
  grid236)  # (written in session 40, not run yet) the points of issue 5's grid that run 233 did not re-time after the
            # helpers' path went out of line: the long nucleus 1 in 16 and all bounded at V = 262144, 1 / 4 / 16 / 128
            # rows, and at V = 151936, 4 rows; long rows among 16 / 64 standard ones at V = 262144 against the reference;
            # into $OUT/run236*
    { timeout 170 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 1,4,16,128 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 60 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 4 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 100 python3 benchmarks/check_sampler_gpu.py long_shared_262k 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run236.log" | tail -60 ;;
  ncusrc235) # (written in session 40, not run yet) run 234: instruction fetch is stage 2's largest stall at 128 rows and,
            # (the 1-row figures average in 128 cold helper programs, and run 138 found too few stall samples at 1 row
            # for hot spots). Where: Nsight Compute's full set with source, the standard mix (all bounded) at 128 and
            # 64 rows, V = 151936; the SASS and source lines holding the most stall samples (ncu_hotspots.py) and the
            # details page; into $OUT/ncu_* (about 2 x 100 s)
    ncu_source 200 80 "sample top_p 128" "sample top_p 64" ;;
  stalls234) # (session 40) run 230 found instruction-fetch stalls behind a layout: how much of the standard mix's own
            # launches (all bounded, 1 / 128 rows, V = 151936) goes to each stall reason, stage 1 and stage 2 (Nsight
            # Compute's warp-state, scheduler, throughput and launch sections; the raw page's stall metrics through
            # benchmarks/ncu_stalls.py); into $OUT/run234*
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    { for n in 1 128; do
        echo "######## ncu, all bounded (top_p), $n rows, V = 151936"
        timeout 150 "$NCU" --profile-from-start off --clock-control none --section WarpStateStats \
            --section SchedulerStats --section SpeedOfLight --section LaunchStats -f -o "/tmp/ncu_stalls_$n" \
            python3 benchmarks/profile_ncu.py sample top_p $n 2>&1 | grep -v "^==PROF==" | tail -3
        "$NCU" -i "/tmp/ncu_stalls_$n.ncu-rep" --page raw --csv > "$OUT/run234_raw_$n.csv" 2>&1
        python3 benchmarks/ncu_stalls.py < "$OUT/run234_raw_$n.csv"
      done
      } 2>&1 | tee "$OUT/run234.log" | tail -80 ;;
  final233) # run 233 (session 40) the tree: the helpers' path out of line (run 232) and long_fill on by default: the
            # long nucleus 1 in 16 and all bounded at 32 / 64 / 96 rows with long_fill off / on; long rows among 32 / 64
            # standard ones with long_fill against the reference, bitwise alone, graph equal to eager; the default at 1 /
            # 16 / 128 rows; V = 262144 at 32 / 64 rows; long rows among 16 / 128 standard ones; into $OUT/run233*
    { timeout 150 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 32,64,96 \
          --mix long_nucleus_1_in_16,top_p --long-fill 0,1 --budget-ms 10
      CHECK_LONG_FILL=1 timeout 90 python3 benchmarks/check_sampler_gpu.py long_shared_mid 2>&1 | grep -v "'what': 'env'"
      timeout 80 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 80 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 32,64 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 100 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run233.log" | tail -60 ;;
  noinl232) # run 232 (session 40) run 231: the HELPERS binary itself slows its rows (all bounded, 64 rows, V = 262144:
            # 50.9 / 51.3 µs without helper programs against 43.1 / 43.5; its helpers' code, ~2 100 instructions, lies
            # before the rows' in the SASS). .ab/hnoinl: the helpers' path (sample._help) out of line, after the rows'
            # code, as the binary without helpers lays it out. The tree against hnoinl: all bounded and the long
            # nucleus 1 in 16 at 1 / 16 rows (HELPERS always); all bounded at 64 rows, V = 262144, and the long nucleus
            # and all bounded at 64 rows, V = 151936, with long_fill; into $OUT/run232*
    { mix_variants noinl 130 "- hnoinl" --rows 1,16 --mix top_p,long_nucleus_1_in_16 --budget-ms 10
      mix_variants noinl 90 "- hnoinl" --rows 64 --mix top_p --long-fill 1 --budget-ms 10 --vocab 262144
      mix_variants noinl 110 "- hnoinl" --rows 64 --mix long_nucleus_1_in_16,top_p --long-fill 1 --budget-ms 10
      } 2>&1 | tee "$OUT/run232.log" | tail -60 ;;
  diag231)  # run 231 (session 40) run 230's Nsight Compute: with long_fill stage 2 alone took 28.5 against 20.0 µs (all
            # bounded, 64 rows, V = 262144), the same instructions at 13.2 against 9.3 cycles each, the difference in
            # instruction-fetch stalls. The binary or the grid? .ab/hdiag with FORCE_HELPERS=1 compiles the HELPERS
            # variant without helper programs: all bounded at 64 rows, V = 262144 (the tree with long_fill 0 / 1 and with
            # 64 chunks; hdiag with 16 / 64 chunks), and at 96 rows, V = 151936 (the tree with long_fill 0 / 1; hdiag
            # with 16 / 32 chunks); into $OUT/run231*
    { timeout 100 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --long-fill 0,1 --budget-ms 10
      timeout 60 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --long-chunks 64 --budget-ms 10
      FORCE_HELPERS=1 PYTHONPATH="$PWD/.ab/hdiag/src:$PYTHONPATH" timeout 90 python3 benchmarks/sampler_mix.py \
          --vocab 262144 --out "$OUT/sample_mix_hdiag.csv" --rows 64 --mix top_p --long-chunks 16,64 --budget-ms 10
      timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 96 --mix top_p \
          --long-fill 0,1 --budget-ms 10
      FORCE_HELPERS=1 PYTHONPATH="$PWD/.ab/hdiag/src:$PYTHONPATH" timeout 90 python3 benchmarks/sampler_mix.py \
          --vocab 151936 --out "$OUT/sample_mix_hdiag.csv" --rows 96 --mix top_p --long-chunks 16,32 --budget-ms 10
      } 2>&1 | tee "$OUT/run231.log" | tail -60 ;;
  regs230)  # run 230 (session 40) run 229's trace: with long_fill the 64 rows' candidate merge took ~20 µs against ~11
            # (all bounded, V = 262144), the helpers having left at once; 64 chunks without helpers did not slow it. Does
            # stage 2's register cap (table: 255) matter: all bounded at 64 rows, V = 262144, with and without long_fill,
            # caps 128 / 255; the long nucleus 1 in 16 and all bounded at V = 151936, 64 rows, long_fill, cap 128; then
            # Nsight Compute's launch, occupancy, throughput, memory and warp-state sections of stage 2, all bounded at
            # 64 rows, V = 262144, without and with long_fill; into $OUT/run230*
    { timeout 120 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --with long_fill=1 --regs2 128,255 --budget-ms 10
      timeout 90 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --regs2 128,255 --budget-ms 10
      timeout 120 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 64 \
          --mix long_nucleus_1_in_16,top_p --with long_fill=1 --regs2 128 --budget-ms 10
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      for o in long_fill=0 long_fill=1; do
        echo "######## ncu stage 2, top_p 64 rows V = 262144, $o"
        timeout 100 "$NCU" --profile-from-start off --clock-control none -k regex:sample_stage2 --section LaunchStats \
            --section Occupancy --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
            --section SchedulerStats python3 benchmarks/profile_ncu.py sample top_p 64 262144 $o 2>&1 | grep -v "^==PROF=="
      done
      } 2>&1 | tee "$OUT/run230.log" | tail -250 ;;
  fillab229) # run 229 (session 40) why long_fill slowed the all-bounded batch at 64 rows, V = 262144 (run 228: 50.8 against
            # 43.4 µs; its helpers leave at once there): fill first, then the default, then 64 chunks without helpers
            # (long_chunks=64); all bounded at V = 151936, 48 / 64 / 96 rows, with and without; the stamped timeline
            # (.ab/trace_s40) of all bounded at V = 262144, 64 rows, with and without, and of the long nucleus 1 in 16
            # at V = 151936, 64 rows, with long_fill; into $OUT/run229*
    { timeout 100 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --long-fill 1,0 --budget-ms 10
      timeout 60 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 64 --mix top_p \
          --long-chunks 64 --budget-ms 10
      timeout 130 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 48,64,96 \
          --mix top_p --long-fill 0,1 --budget-ms 10
      for w in long_fill=0 long_fill=1; do
        PYTHONPATH="$PWD/.ab/trace_s40/src:$PYTHONPATH" timeout 60 python3 benchmarks/trace_long_passes.py --rows 64 \
            --vocab 262144 --mix top_p --reps 2 --with $w --out "$OUT/run229_trace_bounded_$w.txt" > /dev/null
        cat "$OUT/run229_trace_bounded_$w.txt"
      done
      PYTHONPATH="$PWD/.ab/trace_s40/src:$PYTHONPATH" timeout 100 python3 benchmarks/trace_long_passes.py --rows 64 \
          --mix long_nucleus_1_in_16 --reps 2 --with long_fill=1 --out "$OUT/run229_trace_long.txt" > /dev/null
      cat "$OUT/run229_trace_long.txt"
      } 2>&1 | tee "$OUT/run229.log" | tail -150 ;;
  fill228)  # (written in session 39, not run yet) Sampler(long_fill=True: helpers up to one program per SM and more
            # chunks a pass above 16 rows) against the default, alternating in one process, the long and mid nuclei 1 in
            # 16 at 32 / 64 / 96 rows, V = 151936, and all bounded (run 227: the long nucleus 1.98x / 1.93x the
            # all-bounded batch at 32 / 64 rows); long rows among 32 / 64 standard ones with long_fill against the
            # reference, bitwise alone, graph equal to eager; then the long nucleus and all bounded at V = 262144,
            # 32 / 64 rows; into $OUT/run228* (PART_SECONDS=560)
    { timeout 200 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 32,64,96 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16 --long-fill 0,1 --budget-ms 10
      timeout 60 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 32,64,96 \
          --mix top_p --budget-ms 10
      CHECK_LONG_FILL=1 timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared_mid 2>&1 | grep -v "'what': 'env'"
      timeout 150 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix.csv" --rows 32,64 \
          --mix long_nucleus_1_in_16,top_p --long-fill 0,1 --budget-ms 10
      } 2>&1 | tee "$OUT/run228.log" | tail -60 ;;
  grid227)  # run 227 (session 39, the device budget's last ~450 s) the tree (ac309d6) at the vocabulary issue 5 also names:
            # the long nucleus 1 in 16 and all bounded at V = 262144, 1 / 16 / 128 rows; long rows among 16 / 64 standard
            # ones at V = 262144 against the reference; then the rows between (4 / 32 / 64) at V = 151936 and 262144;
            # each step's lines in $OUT/run227.log as they come
    { timeout 150 python3 benchmarks/sampler_mix.py --vocab 262144 --out "$OUT/sample_mix_262k.csv" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 10
      timeout 70 python3 benchmarks/check_sampler_gpu.py long_shared_262k 2>&1 | grep -v "'what': 'env'"
      timeout 200 python3 benchmarks/sampler_mix.py --vocab 151936,262144 --out "$OUT/sample_mix_between.csv" \
          --rows 4,32,64 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      } 2>&1 | tee "$OUT/run227.log" | tail -60 ;;
  final226) # run 226 (session 39) the session's last tree (run 224's board looks, run 225's owner that looks at its done
            # count first and idle programs' 200 ns back-off) against .ab/base (0a80c3c): the long and mid nuclei, all
            # bounded and top-p without top-k at 1 / 16 / 128 rows; then the tree's long rows among 16 / 128 standard
            # ones against the reference, bitwise alone, graph equal to eager, every kind of long set, untruncated rows
            # and verification against the reference; into $OUT/run226*
    { mix_variants final 110 "- base" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      timeout 230 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long untruncated verify 2>&1 \
          | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run226.log" | tail -60 ;;
  own225)   # run 225 (session 39) the tree (an owner whose pass was posted before its candidates looks at the done count
            # before claiming; its wide window read back by scalar loads) against .ab/scan (c3bf37e: run 224's tree),
            # .ab/own_sleep (the tree, and idle programs sleep 200 ns between looks while a row runs) and .ab/base
            # (0a80c3c), the long and mid nuclei and all bounded at 1 / 16 / 128 rows; the tree's stamped timeline
            # (.ab/trace_own) at 1 row; into $OUT/run225*
    { mix_variants own 100 "- scan own_sleep base" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_own/src:$PYTHONPATH" timeout 60 python3 benchmarks/trace_long_passes.py --rows 1 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run225_trace.txt" > /dev/null
      cat "$OUT/run225_trace.txt"
      } 2>&1 | tee "$OUT/run225.log" | tail -100 ;;
  scan224)  # run 224 (session 39) the tree (a program's look at the board: one tuple reduction, a scalar load at 1 row,
            # shared_sets._scan_board) against .ab/base (0a80c3c: three reductions per look), the long and mid nuclei and
            # all bounded at 1 / 16 / 128 rows; the tree's stamped timeline (.ab/trace_s39b: fence-free first-time
            # stamps, new stamps around the DONE exchange and the owner's last step) at 128 and 1 rows; the tree's long
            # rows among 16 / 128 standard ones against the reference, bitwise alone, graph equal to eager; into
            # $OUT/run224*
    { mix_variants scan 100 "- base" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_s39b/src:$PYTHONPATH" timeout 150 python3 benchmarks/trace_long_passes.py --rows 128,1 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run224_trace.txt" > /dev/null
      cat "$OUT/run224_trace.txt"
      timeout 100 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run224.log" | tail -100 ;;
  trace223) # run 223 (session 39) the stamped timeline (.ab/trace_s39: the tree's code plus stamps) of the long nucleus 1
            # in 16 at 128 and 1 rows, with new stamps: each program's first board scan (before / after / first finding a
            # post), the time of a pass posted before the candidates, and the owner's early key after its wide step (where
            # do run 217's ~5 µs between entering the shared passes and claiming at 128 rows go; and the ~1 µs from the
            # wide step to the early draw at 1 row); into $OUT/run223*
    { PYTHONPATH="$PWD/.ab/trace_s39/src:$PYTHONPATH" timeout 150 python3 benchmarks/trace_long_passes.py --rows 128,1 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run223_trace.txt" > /dev/null
      cat "$OUT/run223_trace.txt"
      } 2>&1 | tee "$OUT/run223.log" | tail -80 ;;
  poll222)  # run 222 (session 38) timing, then checks: .ab/sleep (a program with nothing to take while a row runs sleeps
            # 200 ns before its next look at the board: fewer loads on the posted row's state line) and .ab/ldacq (an
            # owner polls its pass's done count by ld.acquire instead of an acquire RMW on the word its chunks' releases
            # add to) against .ab/t222 (the tree, a4a46ab), the long and mid nuclei and all bounded at 1 / 16 / 128
            # rows; then each variant's long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager; into $OUT/run222*
    { mix_variants t222 95 "t222 sleep ldacq" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p \
          --budget-ms 10
      for v in sleep ldacq; do
          PYTHONPATH="$PWD/.ab/$v/src:$PYTHONPATH" timeout 60 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 \
              | grep -v "'what': 'env'"
      done
      } 2>&1 | tee "$OUT/run222.log" | tail -60 ;;
  final221) # run 221 (session 38) the session's last tree (run 220's plain parameter loads adopted; token_processed on
            # 0-d blocks: no block reduction to read a long row's early draw back) against .ab/h221 (1b098e5): the long
            # and mid nuclei, all bounded and top-p without top-k at 1 / 16 / 128 rows; then the tree's long rows among
            # 16 / 128 standard ones against the reference, bitwise alone, graph equal to eager, every kind of long set,
            # untruncated rows (their tokens' log-probabilities read beyond the candidates) and verification against
            # the reference; into $OUT/run221*
    { mix_variants final 100 "- h221" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long untruncated verify 2>&1 \
          | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run221.log" | tail -60 ;;
  ca220)    # run 220 (session 38) a chunk's pass parameters by plain loads (L1-cached: one L2 request per line and SM after
            # the claim's acquire, which makes them visible) instead of .cg ones (a request per warp and word at the L2,
            # 21 per warp, every program of a 1-row launch on the same two lines; run 217's timeline: 4.6 µs from a
            # helper's claim to its parameters at 1 row): .ab/ca against the tree, the long and mid nuclei and all
            # bounded at 1 / 16 / 128 rows; .ab/trace_ca's timeline at 1 row; .ab/ca's long rows among 16 / 128
            # standard ones against the reference, bitwise alone, graph equal to eager, every kind of long set;
            # into $OUT/run220*
    { mix_variants tree 100 "- ca" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_ca/src:$PYTHONPATH" timeout 60 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run220_trace.txt" > /dev/null
      PYTHONPATH="$PWD/.ab/ca/src:$PYTHONPATH" timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run220.log" | tail -40 ;;
  lb219)    # run 219 (session 38) a long pass's sub-tile (long_block 1024, the default since run 60, against 2048: twice the
            # tokens per thread and iteration, for a loop that run 216's profile shows latency-bound at 2 warps per
            # scheduler) for the long and mid nuclei at 1 / 16 / 128 rows; 16 against 32 chunks a pass at 128 rows;
            # into $OUT/run219*
    { timeout 250 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 1,16,128 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16 --long-block 1024,2048 --budget-ms 10
      timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 128 \
          --mix long_nucleus_1_in_16 --long-chunks 16,32 --budget-ms 10
      } 2>&1 | tee "$OUT/run219.log" | tail -40 ;;
  parts218) # run 218 (session 38) timing only, what a search pass's chunk spends its ~2 µs per sub-tile on (run 217's
            # timeline at 128 rows): the tree against .ab/noatom (no per-token reductions: wrong sums) and .ab/nonoise
            # (the early draw without Gumbel noise: the row's best token), the long nucleus at 1 / 16 / 128 rows; into
            # $OUT/run218*
    { mix_variants tree 70 "- noatom nonoise" --rows 1,16,128 --mix long_nucleus_1_in_16 --budget-ms 10
      } 2>&1 | tee "$OUT/run218.log" | tail -40 ;;
  red217)   # run 217 (session 38) after run 216's profile: the search passes' atomics (and the chunks' fold) as PTX
            # reductions from the operands' own layout (long_rows.red_add: no shared-memory conversions and barriers
            # per sub-tile) and the chunk's 1 / temperature loaded once: the long and mid nuclei, all bounded and
            # top-p without top-k at 1 / 16 / 128 rows against .ab/head (ab22c53); the stamped timeline of the tree
            # (.ab/trace_r) at 128 and 1 rows; then long rows among 16 / 128 standard ones against the reference,
            # bitwise alone, graph equal to eager, every kind of long set; into $OUT/run217*
    { mix_variants red 120 "- head" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_r/src:$PYTHONPATH" timeout 80 python3 benchmarks/trace_long_passes.py --rows 128,1 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run217_trace.txt" > /dev/null
      timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run217.log" | tail -40 ;;
  ncu216)   # run 216 (session 38) Nsight Compute on one call of the long nucleus 1 in 16 at 128 rows (the tree, HEAD's
            # kernels after run 215's fold copies were reverted): where stage 2's chunks spend ~1.8 µs per sub-tile
            # (run 215's timeline: 21.5 µs per chunk of ~9 sub-tiles); the details page, then the hot spots by SASS
            # line and by Triton source line; into $OUT/ncu_*
    ncu_source 300 80 "sample long_nucleus_1_in_16 128" ;;
  fold215)  # run 215 (session 38) the chunks fold a pass's sums into copies of the row's words (chunk c into copy
            # c % FC, FC = chunks / 2**FOLD_SHARE_LOG2, at most 8; the owner adds them up): the tree (4: 128 chunks 8
            # copies, 64 chunks 4) against .ab/f3 (3: 8 / 8, 16 chunks 2) and .ab/head (HEAD, no copies), the long
            # nucleus and all bounded at 1 / 16 / 128 rows; the stamped timeline of HEAD (.ab/trace_h) at 128 rows;
            # then the tree's long rows among 16 / 128 standard ones against the reference, bitwise alone, graph
            # equal to eager, every kind of long set; into $OUT/run215*
    { mix_variants fold 95 "- f3 head" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_h/src:$PYTHONPATH" timeout 70 python3 benchmarks/trace_long_passes.py --rows 128 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run215_trace.txt" > /dev/null
      timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run215.log" | tail -40 ;;
  wide214)  # run 214 (session 37) the session's last tree (search_step's weight above the cut leaves j = 0 out, after
            # run 213) against .ab/w128 (the same with COPIES_UP_TO_LOG2 = 3: launches of 16 chunks a pass, above 16
            # rows, give each chunk WIDE words and no copies, so that their 16-bit top-p searches may start wide):
            # the long nucleus and all bounded at 1 / 16 / 128 rows; then .ab/w128's long rows among 16 / 128
            # standard ones against the reference, bitwise alone, graph equal to eager, and every kind of long set;
            # into $OUT/run214*
    { mix_variants final 100 "- w128" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/w128/src:$PYTHONPATH" timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run214.log" | tail -40 ;;
  cg213)    # run 213 (session 37) after run 212 (its .ab/cg is this tree's src): .ab/cg2 reads the row's sums, the chunks'
            # sums and the tied weights with .cg loads too, not volatile ones: the long nucleus and top-p at 1 / 16 /
            # 128 rows against the tree; then .ab/cg2's long rows among 16 / 128 standard ones against the reference and
            # every kind of long set; into $OUT/run213*
    { mix_variants cg 90 "- cg2" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/cg2/src:$PYTHONPATH" timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run213.log" | tail -40 ;;
  temp212)  # run 212 (session 37) after run 211: the early draw's 1 / temperature loaded beside its best word; .ab/cg the
            # same with a chunk's pass parameters in scalar .cg loads (no vector load and 21 block reductions): the long
            # nucleus, top-p and top-p without top-k at 1 / 16 / 128 rows against .ab/base/src (fb92051's); then long
            # rows among 16 / 128 standard ones against the reference (tree, then .ab/cg); into $OUT/run212*
    { mix_variants temp 100 "- cg base" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p,top_p_no_k --budget-ms 10
      timeout 90 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      PYTHONPATH="$PWD/.ab/cg/src:$PYTHONPATH" timeout 90 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run212.log" | tail -40 ;;
  chain211) # run 211 (session 37) after run 210: wide_step / search_step in three block operations, the early draw's
            # logit load volatile (issued before the wide step): the long and mid nuclei, all bounded and top-p without
            # top-k at 1 / 16 / 128 rows against .ab/base/src (fb92051's); the stamped timeline (.ab/trace_f) at 1 / 16
            # rows; then long rows among 16 / 128 standard ones against the reference, bitwise alone, graph equal to
            # eager; every kind of long set; into $OUT/run211*
    { mix_variants chain 130 "- base" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_f/src:$PYTHONPATH" timeout 70 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run211_trace.txt" > /dev/null
      timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      } 2>&1 | tee "$OUT/run211.log" | tail -40 ;;
  early210) # run 210 (session 37) the long rows' chain shortened: nucleus_beyond's candidates loaded with the statistics,
            # the early draw's loads issued before the wide step. Long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager; every kind of long set; the long and mid nuclei, all
            # bounded and top-p without top-k at 1 / 16 / 128 rows against .ab/base/src (fb92051's); the stamped
            # timeline (.ab/trace_e) at 1 / 16 rows; into $OUT/run210*
    { timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      mix_variants early 130 "- base" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_e/src:$PYTHONPATH" timeout 80 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run210_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run210.log" | tail -40 ;;
  now209)   # run 209 (session 37; written in session 36 as ceil208) the tree after run 208: nucleus_beyond's candidates bounded halfway to the next
            # 16-bit value (keys.row_key_ceiling). Long rows among 16 / 128 standard ones against the reference, bitwise
            # alone, graph equal to eager; every kind of long set; the long and mid nuclei, all bounded and top-p without
            # top-k (bounded pure nuclei: they now evaluate the second bound before their candidates) at 1 / 16 / 128 rows
            # against .ab/main/src (make it from 6c1712c: git archive 6c1712c src); the stamped timeline (.ab/trace_c,
            # make_trace_snapshot.py: the owner's steps after its last pass) at 1 / 16 rows; into $OUT/run209*
    { timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      mix_variants ceil 130 "- main" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p,top_p_no_k \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_c/src:$PYTHONPATH" timeout 80 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run209_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run209.log" | tail -40 ;;
  fit207)   # run 207 (session 36) 64 chunks from 2 to 16 rows on an H100 (Sampler._chunks) and wide passes at 1 row too:
            # long rows among 16 / 128 standard ones against the reference, bitwise alone (1-row launches now wide, 16-row
            # ones with 64 chunks), graph equal to eager; every kind of long set; the long and mid nuclei and all
            # bounded at 1 / 16 / 128 rows against .ab/main/src (6c1712c's); into $OUT/run207*
    { timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      mix_variants fit 150 "- main" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p \
          --budget-ms 10; } 2>&1 | tee "$OUT/run207.log" | tail -40 ;;
  help206)  # run 206 (session 36) helpers enough for every chunk where the GPU holds them (sampler._helpers; a pass posted
            # before the candidates ran its last chunks in a second round, run 205): long rows among 16 / 128 standard
            # ones against the reference, bitwise alone, graph equal to eager; the long and mid nuclei and all bounded
            # at 1 / 16 rows against .ab/c64 (the same with 64 chunks up to 16 rows) and .ab/spec (run 205's tree); the
            # stamped timeline (.ab/trace_h) at 1 / 16 rows; into $OUT/run206*
    { timeout 110 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants help 110 "- c64 spec" --rows 1,16 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_h/src:$PYTHONPATH" timeout 90 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run206_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run206.log" | tail -40 ;;
  spec205)  # run 205 (session 36) nucleus_beyond's second bound (a nucleus whose tiles' emitted candidates weigh less than
            # top_p posts its first pass before its candidates): long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager; every kind of long set; the long and mid nuclei and all
            # bounded at 1 / 16 / 128 rows against .ab/main/src; the stamped timeline (.ab/trace_spec) at 16 rows; into
            # $OUT/run205*
    { timeout 170 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw long 2>&1 | grep -v "'what': 'env'"
      mix_variants spec 170 "- main" --rows 1,16,128 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p \
          --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace_spec/src:$PYTHONPATH" timeout 100 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run205_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run205.log" | tail -40 ;;
  ab204)    # run 204 (session 36) the stamped timeline of main (.ab/trace_now) and of .ab/trace_direct (a timing
            # experiment: wide passes add straight into the row's totals, no chunk words; wrong ties) at 16 rows, with
            # stamps inside each program's first chunk; then main, .ab/direct and .ab/params (scalar parameter loads
            # alone, branch quick's first half) timed at 1 / 16 rows; into $OUT/run204*
    { PYTHONPATH="$PWD/.ab/trace_now/src:$PYTHONPATH" timeout 120 python3 benchmarks/trace_long_passes.py --rows 16 \
          --mix long_nucleus_1_in_16 --reps 3 --out "$OUT/run204_trace_main.txt" > /dev/null
      PYTHONPATH="$PWD/.ab/trace_direct/src:$PYTHONPATH" timeout 120 python3 benchmarks/trace_long_passes.py --rows 16 \
          --mix long_nucleus_1_in_16 --reps 3 --out "$OUT/run204_trace_direct.txt" > /dev/null
      mix_variants main 100 "- direct params" --rows 1,16 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run204.log" | tail -30 ;;
  trace202) # (session 35, not run yet) the stamped timeline of main after the wide passes merged (.ab/trace_now,
            # make_trace_snapshot.py) for the long nucleus 1 in 16 at 16 rows; into $OUT/run202_trace.txt
    { PYTHONPATH="$PWD/.ab/trace_now/src:$PYTHONPATH" timeout 150 python3 benchmarks/trace_long_passes.py --rows 16 \
          --mix long_nucleus_1_in_16 --reps 3 --out "$OUT/run202_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run202.log" | tail -5 ;;
  trace199) # run 199 (session 35) stamped timelines (make_trace_snapshot.py) of branch wide (.ab/trace_wide: one wide
            # search pass) and of main (.ab/trace_main) for the long nucleus 1 in 16 at 1 / 16 rows; into $OUT/run199*.txt
    { PYTHONPATH="$PWD/.ab/trace_wide/src:$PYTHONPATH" timeout 150 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run199_trace_wide.txt" > /dev/null
      PYTHONPATH="$PWD/.ab/trace_main/src:$PYTHONPATH" timeout 150 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run199_trace_main.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run199.log" | tail -5 ;;
  copies195) # run 195 (session 35, branch copies-per-program, merged) the search's copies per program rather than per chunk (hist
            # scratch back to 32 KiB per row above 16 rows, plus 16 KiB per program): long rows among 16 / 128
            # standard ones against the reference, bitwise alone, graph equal to eager; the long nucleus and all
            # bounded at 128 rows against .ab/main/src (create it from main's src first); into $OUT/run195.log
    { timeout 110 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants copies 90 "- main" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run195.log" | tail -5 ;;
  copies193) # run 193 (session 34, branch warp-copies): the copies only where a pass has at most 16 chunks (more than
            # 16 rows; the 1-16-row launches compile as main's): long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager; the long nucleus and all bounded at 128 rows against
            # .ab/main/src (d5af86a); into $OUT/run193.log
    { timeout 110 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants copies 90 "- main" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run193.log" | tail -5 ;;
  copies192) # run 192 (session 34, branch warp-copies): each warp adds a search pass's sums into its own copy of the
            # chunk's 256 words (run 189: same-word atomics from different warps serialise at the L2): long rows among
            # 16 / 128 standard ones against the reference, bitwise alone, graph equal to eager; the long nucleus (and
            # with processed log-probabilities) and all bounded at 1 / 16 rows, the long nucleus and all bounded at 128,
            # against .ab/main/src (d5af86a); into $OUT/run192.log
    { timeout 120 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants copies 150 "- main" --rows 1,16 --mix long_nucleus_1_in_16,long_nucleus_1_in_16_lp,top_p \
          --budget-ms 10
      mix_variants copies 90 "- main" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run192.log" | tail -5 ;;
  probe189) # run 189 (session 34): the atomics alone (benchmarks/atomics_probe.py: per-chunk digit words by
            # pattern, sampled-digit combining, the fine table shared or private, same-address RMW latency), then
            # the stamped timeline of main (.ab/trace9, make_trace_snapshot.py) at 1 / 16 / 128 rows; into $OUT/run189.log
    { timeout 150 python3 benchmarks/atomics_probe.py --out "$OUT/run189_atomics.jsonl"
      PYTHONPATH="$PWD/.ab/trace9/src:$PYTHONPATH" timeout 120 python3 benchmarks/trace_long_passes.py --rows 1,16,128 \
          --mix long_nucleus_1_in_16 --reps 1 --out "$OUT/run189_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run189.log" | tail -5 ;;
  final187) # run 187 (session 33): the merged tree (f229525's kernels) at 128 rows: the long nucleus and all bounded
    { mix_variants final 140 "-" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run187.log" | tail -5 ;;
  spec186)  # run 186 (session 33): .ab/spec3 (branch spec3: the first search pass posted before the candidates for
            # nuclei that stage 1's statistics show beyond the bound, on top of the early draw) against the tree
            # (1309857's kernels): long rows among 16 / 128 standard ones against the reference, bitwise alone, graph
            # equal to eager (spec3, processed and raw log-probabilities); the long nucleus, top-p without top-k
            # (bounded nuclei: what the decision costs them) and all bounded at 1 / 16 rows; into $OUT/run186.log
    { PYTHONPATH="$PWD/.ab/spec3/src:$PYTHONPATH" timeout 100 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants tree 240 "- spec3" --rows 1,16 --mix long_nucleus_1_in_16,top_p_no_k,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run186.log" | tail -5 ;;
  final185) # run 185 (session 33): once the early draw holds, no weight tied before the chunks is summed and a lone row
            # leaves without a look at the board: long rows among 16 / 128 standard ones against the reference,
            # bitwise alone, graph equal to eager (processed and raw log-probabilities); the long nucleus and all
            # bounded at 1 / 16 rows against .ab/early2/src (26a845c); the mid nucleus and min-p alone at 1 / 16, the
            # long nucleus and all bounded at 128, the tree alone; into $OUT/run185.log
    { timeout 90 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants final 130 "- early2" --rows 1,16 --mix long_nucleus_1_in_16,top_p --budget-ms 10
      mix_variants final 80 "-" --rows 1,16 --mix mid_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 10
      mv "$OUT/sample_mix_final.csv" "$OUT/sample_mix_final_a.csv"
      mix_variants final 80 "-" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run185.log" | tail -5 ;;
  acq184)   # run 184 (session 33): the early draw's token read while the next pass runs (26a845c), and .ab/acq (the same
            # with the helpers' scan loading the rows' states with acquire semantics, ld.acquire.gpu, in place of an
            # acquiring RMW on the chosen row before its claim): long rows among 16 / 128 standard ones against the
            # reference, bitwise alone, graph equal to eager (the tree with raw log-probabilities, acq with both);
            # the long nucleus, the mid nucleus and all bounded at 1 / 16 rows for the tree, .ab/early/src (d2dccfd)
            # and acq; into $OUT/run184.log
    { timeout 80 python3 benchmarks/check_sampler_gpu.py long_shared_raw 2>&1 | grep -v "'what': 'env'"
      PYTHONPATH="$PWD/.ab/acq/src:$PYTHONPATH" timeout 110 python3 benchmarks/check_sampler_gpu.py long_shared \
          long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants early2 330 "- early acq" --rows 1,16 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p \
          --budget-ms 10; } 2>&1 | tee "$OUT/run184.log" | tail -5 ;;
  fine183)  # run 183 (session 33): fine tables (a nucleus whose early draw holds settles its cut from its first pass's
            # table of every key: 1 pass), on top of the early draw (d2dccfd): long rows among 16 / 128 standard ones
            # (processed log-probabilities: the final pass; raw: the early draw and the tables) against the reference,
            # bitwise alone, graph equal to eager; the exact paths' draws at 1e5 (the long nucleus in bf16, fp32 top-k
            # then top-p); the stamped timeline (.ab/trace8); into $OUT/run183.log
    { timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_sampler.py \
          -k "draws_of_the_exact and not untruncated" 2>&1 | tail -4
      PYTHONPATH="$PWD/.ab/trace8/src:$PYTHONPATH" timeout 50 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16 --reps 1 --out "$OUT/run183_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run183.log" | tail -5 ;;
  fine183b) # run 183b: the tree (fine tables) against .ab/early/src (d2dccfd: the early draw alone) and .ab/main/src
            # (87249f4): the long nucleus (and with processed log-probabilities), the mid nucleus and all bounded at 1 / 16
            # rows; the long nucleus and all bounded at 128 (tree and early); into $OUT/run183b.log
    { mix_variants fine 150 "- early main" --rows 1,16 \
          --mix long_nucleus_1_in_16,long_nucleus_1_in_16_lp,mid_nucleus_1_in_16,top_p --budget-ms 10
      mix_variants fine 50 "- early" --rows 128 --mix long_nucleus_1_in_16,top_p --budget-ms 10; } 2>&1 \
        | tee "$OUT/run183b.log" | tail -5 ;;
  early182) # run 182 (session 33): a long row that draws and needs no normalizer draws in its first search pass too
            # (long_rows.chunk_pass early, shared_sets._early_draw), and skips the final pass when that token lies
            # above the cut: long rows among 16 / 128 standard ones (processed log-probabilities: the final pass;
            # raw: the early draw) against the reference, bitwise alone, graph equal to eager; the long nucleus (and
            # the same with processed log-probabilities: always the final pass), the mid nucleus and all bounded at
            # 1 / 16 rows, the long nucleus at 128, against .ab/main/src (87249f4); the stamped timeline
            # (.ab/trace7); into $OUT/run182.log
    { timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared long_shared_raw 2>&1 | grep -v "'what': 'env'"
      mix_variants early 170 "- main" --rows 1,16 \
          --mix long_nucleus_1_in_16,long_nucleus_1_in_16_lp,mid_nucleus_1_in_16,top_p --budget-ms 10
      mix_variants early 50 "- main" --rows 128 --mix long_nucleus_1_in_16 --budget-ms 10
      PYTHONPATH="$PWD/.ab/trace7/src:$PYTHONPATH" timeout 50 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16,mid_nucleus_1_in_16 --reps 1 --out "$OUT/run182_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run182.log" | tail -5 ;;
  spec181)  # run 181 (session 32): a nucleus beyond the bound posts its first search pass before its candidates: long
            # rows among 16 / 128 standard ones and bitwise alone; the long nucleus, the mid nucleus (narrowable) and
            # top-p without top-k at 1 / 16 rows, the long nucleus at 128, against .ab/c180/src (a5b3682); into
            # $OUT/run181.log
    { timeout 80 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
      mix_variants spec 110 "- c180" --rows 1,16 --mix long_nucleus_1_in_16,mid_nucleus_1_in_16,top_p_no_k --budget-ms 10
      mix_variants spec 40 "- c180" --rows 128 --mix long_nucleus_1_in_16 --budget-ms 10; } 2>&1 \
        | tee "$OUT/run181.log" | tail -5 ;;
  chunks180) # run 180 (session 32): 128 chunks a pass up to 16 rows by default (helpers up to 128 programs): long rows
            # among 16 / 128 standard ones and bitwise alone, every kind of long set; the long nucleus, min-p alone,
            # all bounded and top-p without top-k at 1 / 16 rows against .ab/fold/src (027c9d3: 64 chunks); into
            # $OUT/run180.log
    { timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long 2>&1 | grep -v "'what': 'env'"
      mix_variants chunks128 300 "- fold" --rows 1,16 --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p,top_p_no_k \
          --budget-ms 15; } 2>&1 | tee "$OUT/run180.log" | tail -5 ;;
  poll179)  # run 179 (session 32): a chunk's parameters by scalar loads (no 17 block reductions), and a program with
            # nothing to take spins on the state of the row it last helped, then takes a chunk of its next pass:
            # long rows among 16 / 128 standard ones and bitwise alone, every kind of long set; the long nucleus and all
            # bounded at 1 / 16 / 128 rows, min-p alone at 1 / 16, against .ab/fold/src (027c9d3); the stamped timeline
            # (.ab/trace5/src); into $OUT/run179.log. Ran with 158cbf6's code (reverted: no faster, and an illegal
            # address in the 16- and 128-row graph replays)
    { timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared long 2>&1 | grep -v "'what': 'env'"
      mix_variants poll 130 "- fold" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p --budget-ms 15
      mix_variants poll 70 "- fold" --rows 1,16 --mix long_min_p_1_in_16 --budget-ms 15
      PYTHONPATH="$PWD/.ab/trace5/src:$PYTHONPATH" timeout 60 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 1 --out "$OUT/run179_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run179.log" | tail -5 ;;
  claims178) # run 178 (session 32): a pass's first take is each program's preferred chunk, by its own claim word (no
            # counter that 64 programs queue on), and acquires by a fence after the read, not an RMW: long rows among
            # 16 / 128 standard ones and bitwise alone, graph replay, every kind of long set; the long nucleus, min-p
            # alone and all bounded at 1 / 16 / 128 rows against .ab/fold/src (027c9d3), 128 chunks up to 16 rows;
            # the stamped timeline (.ab/trace4/src); into $OUT/run178.log. Ran with cc222b6's code (reverted: slower,
            # and an illegal address at 128 rows); .ab/fold was not carried, so "fold" timed the tree too
    { timeout 230 python3 benchmarks/check_sampler_gpu.py long_shared long 2>&1 | grep -v "'what': 'env'"
      mix_variants claims 300 "- fold" --rows 1,16,128 --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p --budget-ms 15
      echo "== long_chunks_small=128"
      timeout 120 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix_small128.csv" --rows 1,16 \
          --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p --budget-ms 15 --with long_chunks_small=128
      PYTHONPATH="$PWD/.ab/trace4/src:$PYTHONPATH" timeout 100 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run178_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run178.log" | tail -5 ;;
  poll177)  # run 177 (session 32): the hand-over's steps (.ab/trace3/src: stamps at a helper's acquire of a post and
            # at its parameters) at 1 / 16 rows; then 128 chunks up to 16 rows (long_chunks_small=128, helpers up to
            # 128 programs) against the default 64: the long nucleus, min-p alone, all bounded; into $OUT/run177.log
    { PYTHONPATH="$PWD/.ab/trace3/src:$PYTHONPATH" timeout 120 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16 --reps 2 --out "$OUT/run177_trace.txt" > /dev/null
      echo "== long_chunks_small=128"
      timeout 150 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix_small128.csv" --rows 1,16 \
          --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p --budget-ms 15 --with long_chunks_small=128
      echo "== default"
      timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix_small64.csv" --rows 1,16 \
          --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p --budget-ms 15; } 2>&1 | tee "$OUT/run177.log" | tail -5 ;;
  fold176)  # run 176 (session 32): the chunks fold their results into the row's words (the owner reads 256 sums,
            # not 64 x 256; the draw's best and mass by atomics): long rows among 16 / 128 standard ones and bitwise
            # alone, every kind of long set; the long nucleus, min-p alone and the all-bounded batch at 1 / 16 / 128
            # rows against .ab/old/src (abf3a72); the stamped timeline (.ab/trace2/src); into $OUT/run176.log
    { timeout 230 python3 benchmarks/check_sampler_gpu.py long_shared long 2>&1 | grep -v "'what': 'env'"
      mix_variants fold 300 "- old" --rows 1,16,128 --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p --budget-ms 15
      PYTHONPATH="$PWD/.ab/trace2/src:$PYTHONPATH" timeout 120 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --mix long_nucleus_1_in_16,long_min_p_1_in_16 --reps 2 --out "$OUT/run176_trace.txt" > /dev/null; } 2>&1 \
        | tee "$OUT/run176.log" | tail -5 ;;
  trace175) # run 175 (session 32): where a long row's shared passes spend their time: %globaltimer stamps of stage 2's
            # programs (.ab/trace/src: the tree's code with stamps, benchmarks/trace_long_passes.py) for the long
            # nucleus, min-p alone and the all-bounded batch at 1 / 16 rows, the nucleus at 128; into $OUT/run175.log
    { PYTHONPATH="$PWD/.ab/trace/src:$PYTHONPATH" timeout 300 python3 benchmarks/trace_long_passes.py --rows 1,16 \
          --out "$OUT/run175_trace.txt" > /dev/null
      PYTHONPATH="$PWD/.ab/trace/src:$PYTHONPATH" timeout 200 python3 benchmarks/trace_long_passes.py --rows 128 \
          --mix long_nucleus_1_in_16 --out "$OUT/run175_trace128.txt" > /dev/null; } 2>&1 | tee "$OUT/run175.log" | tail -5 ;;
  final174) # run 174 (session 31): the session's end state against its start (.ab/old/src: 5adefbc): verification
            # (whose long-set passes changed: digits, integer sums) against the reference at production sizes and its
            # graph, its long sets, then its γ = 3 times; the standard and top-20 logprobs mixes; into $OUT/run174.log
    { timeout 200 python3 benchmarks/check_sampler_gpu.py verify verify_long 2>&1 | grep -v "'what': 'env'"
      verify_ab 100 1,32,128
      mix_ab "" 150 --rows 1,32,128 --mix top_p,standard_logprobs --budget-ms 15; } 2>&1 | tee "$OUT/run174.log" | tail -5 ;;
  diag173)  # run 173 (session 31, diagnostics of run 172): what the integer sums cost the long rows at 32 / 128 rows
            # (run 172: +2.6 / +4.9 us for the nucleus 1 in 16, +1.2 / +1.4 for min-p alone) with .ab/diagF/src (the
            # tie sum per sub-tile in fp32) and .ab/diagM/src (the draw's mass in fp32 lanes), both inexact, timing
            # only; then 32 chunks up to 16 rows (long_chunks_small=32) against the default 64 at 1 / 16 rows, long
            # nucleus and all bounded; into $OUT/run173.log
    { mix_variants digits 240 "- diagF diagM" --rows 32,128 --mix long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 15
      echo "== long_chunks_small=32"
      timeout 150 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix_small32.csv" --rows 1,16 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 15 --with long_chunks_small=32
      echo "== default"
      timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix_small64.csv" --rows 1,16 \
          --mix long_nucleus_1_in_16,top_p --budget-ms 15; } 2>&1 | tee "$OUT/run173.log" | tail -5 ;;
  chunks172) # run 172 (session 31): every sum of the exact passes an integer sum (the draw's mass, the weight tied
            # before each sub-tile), so no result depends on the chunk count, which now follows the batch: 64 chunks
            # (helpers up to 64 programs) up to 16 rows, 16 above. Long rows shared among 16 (64 chunks) and 128
            # (16) standard ones, bitwise equal alone (64 chunks); every kind of long set; narrowed cuts; then the
            # long nucleus, min-p alone, the standard mix and top-p without top-k against .ab/d1/src (701d605);
            # into $OUT/run172.log
    { timeout 230 python3 benchmarks/check_sampler_gpu.py long_shared long narrow_cuts 2>&1 | grep -v "'what': 'env'"
      mix_variants chunks 300 "- d1" --rows 1,16,32,128 \
          --mix long_nucleus_1_in_16,long_min_p_1_in_16,top_p,top_p_no_k --budget-ms 15; } 2>&1 \
        | tee "$OUT/run172.log" | tail -5 ;;
  copies171) # run 171 (session 31): each program adds a search pass's sums into 8 copies of the 256 words (token i into
            # copy i % 8), then sums them into its chunk's slot: run 170 put ~4 / 17 us at 16 / 128 rows on atomics
            # that serialise on a few words. The long nucleus 1 in 16 and the standard mix on the tree and on
            # .ab/d1/src (701d605: one copy), twice; the long sets at production size; into $OUT/run171.log
    { mix_variants copies 200 "- d1" --rows 1,16,128 --mix long_nucleus_1_in_16,top_p --budget-ms 20
      mix_variants copies_again 100 "- d1" --rows 16,128 --mix long_nucleus_1_in_16 --budget-ms 20
      timeout 200 python3 benchmarks/check_sampler_gpu.py long long_shared 2>&1 | grep -v "'what': 'env'"; } 2>&1 \
        | tee "$OUT/run171.log" | tail -5 ;;
  digits170) # run 170 (session 31, a diagnostic): what the digits' atomics cost a search pass (run 169: ~21 us a pass at
            # 16 rows against ~17 for the 16-way passes). The long nucleus 1 in 16 on the tree, on .ab/diagN/src (no
            # atomics: garbage cuts, the same passes) and .ab/diagS/src (atomics on offs % 256: no two tokens of a
            # sub-tile on one word); into $OUT/run170.log
    { mix_variants digits 400 "- diagN diagS" --rows 1,16,128 --mix long_nucleus_1_in_16 --budget-ms 20; } 2>&1 \
        | tee "$OUT/run170.log" | tail -5 ;;
  digits169) # run 169 (session 31): the exact passes search by 8-bit digits (256 intervals a pass, integer sums by
            # atomics): a full 16-bit cut in 2 passes instead of 4, fp32's in 4 instead of 8. Production-size checks of
            # every kind of long set (sampler and verification, bf16 and fp32), long rows shared among standard ones,
            # narrowed cuts; then the long nucleus and min-p alone 1 in 16 against .ab/old/src (5adefbc); into
            # $OUT/run169.log
    { timeout 300 python3 benchmarks/check_sampler_gpu.py long long_shared narrow_cuts 2>&1 | grep -v "'what': 'env'"
      mix_ab "" 200 --rows 1,16,128 --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 20; } 2>&1 \
        | tee "$OUT/run169.log" | tail -5 ;;
  digits169b) # run 169b (session 31): what the digits cost the batches without long rows (a CUDA graph always launches
            # stage 2's SHARED variant, whose pass code changed): the standard mix and top-p without top-k, then
            # verification (its own passes changed too), each against .ab/old/src (5adefbc); verification's long
            # sets and a graph captured before a long request at production size; into $OUT/run169b.log
    { mix_ab "" 150 --rows 1,32,128 --mix top_p,top_p_no_k --budget-ms 20
      verify_ab 110 1,32,128
      timeout 150 python3 benchmarks/check_sampler_gpu.py verify_long graph_late_long long_shared_fp32 2>&1 \
          | grep -v "'what': 'env'"; } 2>&1 | tee "$OUT/run169b.log" | tail -5 ;;
  rawfree168) # run 168 (session 30): rows with raw log-probabilities and a top-k within the bound (or greedy) skip stage
            # 1's processed sum of exponentials (NORMALIZER_FREE no longer excludes raw log-probabilities; a host
            # change, the same kernels): free rows and tokens with logprob rows against the reference, then the
            # top-20 logprobs and standard mixes against .ab/old/src (ba2a658); into $OUT/run168.log
    { mix_ab "" 150 --rows 1,32,128 --mix standard_logprobs,top_p --budget-ms 20
      timeout 200 python3 benchmarks/check_sampler_gpu.py free_rows tokens 2>&1 | grep -v "'what': 'env'"; } 2>&1 \
        | tee "$OUT/run168.log" | tail -5 ;;
  refill167) # run 167 (session 30): run 166 found the top-20 logprobs mix 5-7 us slower than in run 161: with the refill
            # out of line, that compile spills around the call. Now the refill is inline in launches with top-n
            # log-probabilities (REFILL_CALL): that mix and the standard one against .ab/old/src (6c96c75, always out
            # of line), then rows with a saturated tile (the call's path) and raw-keyed rows (the inline path, with
            # log-probabilities) against the reference; into $OUT/run167.log
    { mix_ab "" 170 --rows 1,32,128 --mix standard_logprobs,top_p --budget-ms 20
      timeout 120 python3 benchmarks/refill_cost.py --rows 1,32,128 --check
      timeout 200 python3 benchmarks/check_sampler_gpu.py raw_keys 2>&1 | grep -v "'what': 'env'"; } 2>&1 \
        | tee "$OUT/run167.log" | tail -5 ;;
  stages166) # run 166 (session 30): where the time goes now: the top-k's stages alone (profile_topk_stages), the
            # sampler's stage 1 alone for the standard, heavy and top-20 logprobs mixes; into $OUT/run166.log
    { timeout 120 python3 benchmarks/profile_topk_stages.py
      timeout 200 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix heavy,standard_logprobs \
          --budget-ms 20; } 2>&1 | tee "$OUT/run166.log" | tail -5 ;;
  tail165)  # run 165 (session 30, a design diagnostic): run 164's tail again, with .ab/diagT/src (stage 2 lets the next
            # launch start at once: let_next_start first) against the tree; into $OUT/run165.log
    { timeout 200 python3 benchmarks/tail_launch_cost.py --rows 1,32,128 --variants plain,plain+tail,shared
      PYTHONPATH="$PWD/.ab/diagT/src:$PYTHONPATH" timeout 250 python3 benchmarks/tail_launch_cost.py --rows 1,32,128 \
          --variants plain,plain+tail,shared,plain | sed 's/^/diagT: /'; } 2>&1 | tee "$OUT/run165.log" | tail -5 ;;
  tail164)  # run 164 (session 30, a design diagnostic): what a third launch after stage 2 (the long rows' passes
            # over every SM, exiting before its PDL wait when no row may exceed the bound) would cost the batches
            # that need none, against stage 2's SHARED variant and the plain one (benchmarks/tail_launch_cost.py);
            # then issue 5's one long nucleus in 16 rows against the all-bounded batch; into $OUT/run164.log
    { timeout 240 python3 benchmarks/tail_launch_cost.py --rows 1,32,128
      timeout 150 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 16,128 \
          --mix top_p,long_nucleus_1_in_16 --budget-ms 20; } 2>&1 | tee "$OUT/run164.log" | tail -5 ;;
  noinline163) # run 163 (session 30): stage 2's other rarely run passes out of line: lowest_selectable (the sampler's
            # walk for an fp16 greedy row ranked all -inf) and verification's long-set passes (long_set_bound,
            # long_set_pass); verification's exactness and long sets at production sizes, greedy rows, then
            # verification and the standard mix against .ab/old/src (6c96c75), alternating, and
            # the standard mix's stage 1 alone (profile_sampler_stages); into $OUT/run163.log
    { timeout 260 python3 benchmarks/check_sampler_gpu.py verify verify_long greedy 2>&1 | grep -v "'what': 'env'"
      verify_ab 100 1,32,64,128
      mix_ab "" 60 --rows 1,32,128 --mix top_p --budget-ms 20
      verify_ab 100 1,32,64,128
      timeout 80 python3 benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix top_p --budget-ms 20; } 2>&1 \
        | tee "$OUT/run163.log" | tail -5 ;;
  outofline162) # (branch refill-out-of-line, not yet run) the sampler's refill as a noinline function (the sorted
            # candidates passed through the refill's scratch): stage 2's main body at 223 registers instead of 236 in
            # the sm_90 compile of the 32-row configuration. Rows with a saturated tile checked and timed
            # (refill_cost), then the standard and heavy mixes and verification against main (.ab/old/src: e1765bd), the standard mix twice
    { timeout 150 python3 benchmarks/refill_cost.py --rows 1,32,128 --check
      PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128 \
          | sed 's/^/before: /'
      mix_ab "" 100 --rows 1,32,128 --mix top_p,heavy --budget-ms 20
      verify_ab 100 1,32,128
      mix_ab _again 60 --rows 1,32,128 --mix top_p --budget-ms 20; } 2>&1 | tee "$OUT/run162.log" | tail -5 ;;
  final161) # run 161 (session 29): the raw top-n's whole-row fallback through merge_tile_above (no sorting network
            # left in stage 2): raw-keyed rows and tile-edge biases against the reference (run 158 did not reach them),
            # then top-20 logprobs and the standard mix against the code before (.ab/old/src: f89dda7); into $OUT/run161.log
    { timeout 280 python3 benchmarks/check_sampler_gpu.py raw_keys bias_edges 2>&1 | grep -v "'what': 'env'"
      mix_ab "" 100 --rows 1,32,128 --mix standard_logprobs,top_p --budget-ms 20; } 2>&1 | tee "$OUT/run161.log" | tail -5 ;;
  checks160) # run 160 (session 29): what run 158 did not reach (graph replay, verification against the reference
            # and its graph) and run 159's heavy mix at 32 / 128 rows against .ab/old/src; into $OUT/run160.log
    { timeout 300 python3 benchmarks/check_sampler_gpu.py graph verify 2>&1 | grep -v "'what': 'env'"
      mix_ab "" 90 --rows 32,128 --mix heavy --budget-ms 20; } 2>&1 | tee "$OUT/run160.log" | tail -5 ;;
  checks158) # run 158 (session 29): production-size checks of merge_tile_above's code (f89dda7): rows with a saturated
            # tile against the reference (refill_cost), the sampler's tokens, raw-keyed rows, biases on tile edges, graph
            # replay, verification, then the top-k's exactness and graph; everything into $OUT/run158.log
    { timeout 150 python3 benchmarks/refill_cost.py --rows 1,32,128 --check | grep "^check"
      timeout 330 python3 benchmarks/check_sampler_gpu.py tokens raw_keys bias_edges graph verify 2>&1 \
          | grep -v "'what': 'env'"
      CHECK_VOCABS=151936 CHECK_CONFIGS= CHECK_KS=1,128 timeout 100 python3 benchmarks/check_topk_gpu.py exact graph \
          | grep -v "'what': 'env'"; } 2>&1 | tee "$OUT/run158.log" | tail -5 ;;
  ab159)    # run 159 (session 29): f89dda7 against the walk alone (.ab/old/src: 290f4c6): the heavy mix and top-20
            # logprobs, verification γ = 3 at B = 64 and 128, the top-k at 1 / 32 / 128 rows; into $OUT/run159.log
    { mix_ab "" 100 --rows 1,32,128 --mix heavy,standard_logprobs --budget-ms 20
      verify_ab 100 64,128
      for t in new old; do
          pp=$PYTHONPATH; [ $t = old ] && pp="$PWD/.ab/old/src:$PYTHONPATH"
          echo "== top-k $t"
          PYTHONPATH=$pp timeout 60 python3 benchmarks/run.py --case topk --impl sonicsampler --vocab 151936 \
              --rows 1,32,128 --budget-ms 40 --out "$OUT/topk_$t.csv" 2>&1 | grep "^topk "
      done; } 2>&1 | tee "$OUT/run159.log" | tail -5 ;;
  refill157) # run 157 (session 29): merge_tile_above ranks the extra keys 16 at a time ((C, 16) comparisons: run 156's
            # (C, C) ones spilled), against the walk alone (.ab/old/src: 290f4c6): refill_cost checked and timed, the
            # standard mix twice, verification γ = 3 at B = 1, 32, 128
    timeout 150 python3 benchmarks/refill_cost.py --rows 1,32,128 --check
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128 \
        | sed 's/^/walk only: /'
    timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128
    mix_ab "" 60 --rows 1,32,128 --mix top_p --budget-ms 20
    mix_ab " (2)" 60 --rows 1,32,128 --mix top_p --budget-ms 20
    verify_ab 100 1,32,128 ;;
  refill156) # run 156 (session 29): a refilled tile's keys above the C-th candidate ranked into the list
            # (topk.merge_tile_above) instead of its bitonic top C merged in: benchmarks/refill_cost.py checked, then
            # timed on the tree, the walk of run 154 alone (.ab/old/src: 290f4c6), the code before both (.ab/orig/src:
            # 7a62d84) and the tree again; then the standard mix against .ab/old (the clean path's cost of the new code)
    timeout 150 python3 benchmarks/refill_cost.py --rows 1,32,128 --check
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128 \
        | sed 's/^/walk only: /'
    PYTHONPATH="$PWD/.ab/orig/src:$PYTHONPATH" timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128 \
        | sed 's/^/before: /'
    timeout 90 python3 benchmarks/refill_cost.py --rows 1,32,128
    mix_ab "" 60 --rows 1,32,128 --mix top_p --budget-ms 20
    mix_ab " (2)" 60 --rows 1,32,128 --mix top_p --budget-ms 20 ;;
  refill154) # run 154 (session 29): stage 2's refill walks the saturated tiles alone (topk.next_marked) instead of
            # every tile with a dependent load each. benchmarks/refill_cost.py: rows whose one tile holds 24 of their
            # best keys, checked against the reference, then timed (sampler and top-k, with and without the saturated
            # tile) on the tree, the code before (.ab/old/src) and the tree again
    timeout 200 python3 benchmarks/refill_cost.py --rows 1,32,128 --check
    PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 120 python3 benchmarks/refill_cost.py --rows 1,32,128 \
        | sed 's/^/before: /'
    timeout 120 python3 benchmarks/refill_cost.py --rows 1,32,128 ;;
  tiles155) # run 155 (session 29): tiles of 2048 (8 emitted, 3% of Gumbel rows refill) again once refills cost
            # one tile each: run 145 timed them at 32 / 128 rows and runs 153 at 4-16 rows with the walk over every tile
    timeout 270 python3 benchmarks/tune_sampler.py --rows 4,32 --out "$OUT/sample_small.json" --configs \
extract/1024/8/1x8/128x255,extract/2048/8/2x8/128x255,extract/2048/8/4x8/0x255,extract/2048/8/1x8/128x255,\
extract/1024/8/1x8/128x255
    timeout 250 python3 benchmarks/tune_sampler.py --rows 128 --out "$OUT/sample_128.json" --configs \
extract/1024/8/1x8/96x255,extract/2048/8/1x8/96x255,extract/2048/8/2x8/96x255,extract/2048/8/2x8/128x255,\
extract/1024/8/1x8/96x255 ;;
  vcaps152) # run 152 (session 29): verification's stage-1 register cap (its PENDING compile spills at 128: 104 / 76
            # spill loads / stores) at 160, 168, 192 and none, against 128 (timed first and last), γ = 3 at B = 1, 32,
            # 128 (stage 2 at 255, the table's) and B = 64 (stage 2 at 128, the table's 256-row point); then B = 1 and 4
            # (4 and 16 target rows, which take the 32-row entry) under the 1-row entry and a 4-warp tile of 2048
    timeout 200 python3 benchmarks/verify_warps.py --rows 1,32,128 --configs 8x255x128,8x255x160,8x255x168,8x255x192,8x255x0
    timeout 120 python3 benchmarks/verify_warps.py --rows 64 --configs 8x128x128,8x128x160,8x128x168,8x128x192
    timeout 200 python3 benchmarks/verify_warps.py --rows 1,4 --configs \
extract/1024/8/1x8/128x255,rank/4096/16/8x8/0x0,extract/2048/8/4x8/0x255,extract/1024/8/2x8/128x255 ;;
  small153) # run 153 (session 29): the sampler at 4, 8 and 16 rows, which take the 32-row entry (never tuned there):
            # that entry (first and last) against the 1-row entry, tiles of 2048 and 4096 at 2-8 warps
    timeout 520 python3 benchmarks/tune_sampler.py --rows 4,16,8 --out "$OUT/sample_small.json" --configs \
extract/1024/8/1x8/128x255,rank/4096/16/8x8/0x0,extract/2048/8/4x8/0x255,extract/2048/8/2x8/128x255,\
extract/1024/8/2x8/128x255,extract/4096/16/8x8/0x255,extract/1024/8/1x8/168x255,extract/1024/8/1x8/128x255 ;;
  regs151)  # run 151 (session 28): stage 1 capped at 96 registers from 33 rows up (runs 150-150b), against the table
            # before (.ab/old/src): verification γ = 3 at B = 32, 64, 128; the standard and heavy mixes at 128 rows
    verify_ab 150 32,64,128
    mix_ab "" 100 --rows 128 --mix top_p,heavy --budget-ms 20 ;;
  warps148) # run 148 (session 28): the sampler table's new 256-row point (stage 2 capped at 128 registers, two programs
            # per SM: 129-256 rows in one wave; run 147) against the table before (.ab/old/src): verification at the
            # row counts it touches (γ = 3 B = 64; γ = 1 B = 128; γ = 5, 7 B = 32) and beside them (γ = 3 B = 128),
            # V = 151936, then γ = 3 B = 64 at V = 262144 and 32768; the sampler at 256 rows, both caps
    verify_ab 100 64,128
    verify_ab 100 128 --gamma 1
    verify_ab 100 32 --gamma 5,7
    timeout 100 python3 benchmarks/tune_sampler.py --rows 256 --out "$OUT/sample_256.json" \
        --configs extract/1024/8/1x8/128x255,extract/1024/8/1x8/128x128,extract/1024/8/1x8/128x255
    verify_ab 100 64 --vocab 262144
    verify_ab 100 64 --vocab 32768 ;;
  tune145)  # run 145 (session 28): the sampler's 32- and 128-row configurations again. The table's entries are from run 70,
            # before raw-ranked rows, free rows and the pair keys made stage 1 cheaper (stage 2, whose selection grows
            # with the tiles' lists, is now a third of the 128-row time): tiles of 2048 (half the lists) and 4096
            # against the entry (extract/1024/8/1x8, timed first and last)
    timeout 520 python3 benchmarks/tune_sampler.py --rows 32,128 --out "$OUT/sample_sm90.json" --configs \
extract/1024/8/1x8/128x255,extract/2048/8/1x8/128x255,extract/2048/8/2x8/128x255,extract/2048/8/1x8/168x255,\
extract/4096/16/4x8/128x255,extract/2048/8/4x8/0x255,extract/4096/16/8x8/0x255,extract/1024/8/1x8/128x255 ;;
  ids144)   # run 144 (session 28): stage 2's rows served by program id, no tickets or launch counters (helpers
            # optional, kernels/shared_sets.py). Long rows among standard ones and lone long rows with helpers against
            # the reference and in graph replays, a graph captured before a long request; then the standard and heavy
            # mixes against the code before (.ab/old/src: 1b0231c), and the sharing batches at 1 row
    timeout 200 python3 benchmarks/check_sampler_gpu.py long_shared graph_late_long 2>&1 | grep -v "'what': 'env'"
    mix_ab " 1" 110 --rows 1,32,128 --mix top_p,heavy --budget-ms 20
    mix_ab " 2" 50 --rows 1 --mix top_p_no_k,long_nucleus_1_in_16 --budget-ms 20
    mix_ab " 3" 40 --rows 1,32,128 --mix top_p --budget-ms 20 ;;
  uniform143) # run 143 (a diagnostic): is it the row index coming from the ticket? .ab/diagH/src: the HELPERS compile
             # whose programs still take tickets (the atomic kept) but serve rows by program id (so the row is the
             # program id, as without HELPERS; wrong for long rows, none here); the tree before and after, 1 row
    mix_variants tree 120 "- diagH -" --rows 1 --mix top_p,heavy --budget-ms 20 ;;
  helpers142) # run 142 (a diagnostic): what the 1-row launch's helper programs cost by their number. The tree with
             # long_chunks 4 / 8 / 16 (3 / 7 / 15 helpers; the chunks of a long pass change too, unused here), then
             # .ab/diagG/src: the HELPERS compile launched with no helper (n_help 0 at run time); standard mix, 1 row
    timeout 200 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 1 --mix top_p \
        --long-chunks 4,8,16 --budget-ms 20
    PYTHONPATH="$PWD/.ab/diagG/src:$PYTHONPATH" timeout 100 python3 benchmarks/sampler_mix.py --vocab 151936 \
        --out "$OUT/sample_mix_diagG.csv" --rows 1 --mix top_p --budget-ms 20
    timeout 60 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 1 --mix top_p \
        --budget-ms 20 ;;
  codesize141) # run 141 (a diagnostic): is the 1-row HELPERS launch's ~1.4 us (run 139b) its code? .ab/diagE/src: helpers
             # launched and taking tickets as before, but their copy of the passes (`_help`) compiled out; the tree
             # before and after it, the standard mix at 1 row
    mix_variants tree 120 "- diagE -" --rows 1 --mix top_p,heavy --budget-ms 20 ;;
  tickets140) # run 140 (session 27; the change was reverted after it): a launch that shares nothing takes no tickets (kernels/sample.py: the batch's
             # MAY_EXCEED bits read first; rows keep their program ids, helpers leave at once). The standard and
             # heavy mixes against the code before (.ab/old/src), then the standard mix again, alternating
    mix_ab " 1" 300 --rows 1,32,128 --mix top_p,heavy --budget-ms 20
    mix_ab " 2" 100 --rows 1,32,128 --mix top_p --budget-ms 20 ;;
  tickets140b) # run 140b: launches that share (tickets taken as before): long rows among standard ones and lone long
               # rows with helper programs against the reference and in graph replays, a graph captured before a long
               # request; then the sharing batches at 1 row (top-p without top-k, 1 long nucleus) against the code before
    timeout 300 python3 benchmarks/check_sampler_gpu.py long_shared graph_late_long 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 110 --rows 1 --mix top_p_no_k,long_nucleus_1_in_16 --budget-ms 20 ;;
  shared139b) # run 139b (a diagnostic): where the SHARED variant's cost goes when no row shares. .ab/diagA/src: SHARED
             # without helper programs (the row programs alone, no ticket); .ab/diagB/src: SHARED with helpers, the
             # batch's MAY_EXCEED bits not read (share forced false); .ab/diag/src: not SHARED (run 139); the standard
             # mix on each, the tree first and last
    mix_variants new 100 "- diagA diagB diag -" --rows 1,32,128 --mix top_p --budget-ms 20 ;;
  shared139) # run 139 (session 27, a timing diagnostic): what stage 2's SHARED variant costs the graph path's batches
            # that never need it. Device slots (CUDA graphs) always take it (a graph captured before a request that
            # may exceed the bound must still sample it exactly); run 138 showed its 1-row launch as 16 programs of
            # ~21 700 SASS lines. .ab/diag/src is the tree with the device-slot summary's SHARED forced off (wrong for
            # long rows; the standard mix has none). The standard and heavy mixes, tree and diagnostic alternating
    for r in 1 2; do
        echo "== new $r"
        timeout 130 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 1,32,128 \
            --mix top_p,heavy --budget-ms 20
        echo "== diag $r"
        PYTHONPATH="$PWD/.ab/diag/src:$PYTHONPATH" timeout 130 python3 benchmarks/sampler_mix.py --vocab 151936 \
            --out "$OUT/sample_mix_diag.csv" --rows 1,32,128 --mix top_p,heavy --budget-ms 20
    done ;;
  ncu138)   # run 138 (session 27): Nsight Compute on one 1-row call each of the sampler (standard mix) and the top-k,
            # where stage 2's ~12 (sampler) and ~8 (top-k) us go now (run 67 was before sessions 8-26): the details
            # page (stall reasons), then the hot spots by SASS line and by Triton source line (lineinfo)
    ncu_source 200 50 "sample top_p 1" "topk - 1" ;;
  tune137)  # run 137 (session 27): the 1-row table entry (rank/4096/16, run 70) against extract configurations, which
            # since run 70 gained raw-ranked temperature rows (session 24), rows free of the normalizer (25) and
            # the pair keys (26), none of which the rank strategy takes; the current entry twice (noise)
    timeout 420 python3 benchmarks/tune_sampler.py --rows 1 --out "$OUT/sample_sm90.json" \
        --configs rank/4096/16/8x8,extract/1024/8/1x8/128x255,extract/1024/8/1x8/0x255,extract/2048/8/2x8/0x255,extract/2048/16/2x8/0x255,extract/4096/16/4x8/0x255,rank/4096/16/8x8
    cat "$OUT/sample_sm90.json.timings.jsonl" ;;
  keys136b) # run 136b: what keys136's 220 s step cut off on a fresh machine: tile-edge biases (twelve 1-row
            # batches, then 32 and 128 rows) and raw-ranked rows at V = 262144, against the reference
    timeout 300 python3 benchmarks/check_sampler_gpu.py bias_edges 2>&1 | grep -v "'what': 'env'"
    CHECK_RAW="262144:8" timeout 200 python3 benchmarks/check_sampler_gpu.py raw_keys 2>&1 | grep -v "'what': 'env'" ;;
  keys136)  # run 136 (session 27): the pair keys' -0.0 fix-up as fma.rn.bf16x2 (sm_80) instead of add.rn.bf16x2
            # (which ptxas takes only for sm_90), and the PTX gated per compile target (keys.pair_keys_in_ptx).
            # The keys against the integer path over all 2**32 patterns (ptx_path must be true here); tile-edge
            # biases (twelve 1-row batches, 32 and 128 rows) and raw-ranked rows against the reference; then the
            # standard and heavy mixes against c4f7240 (.ab/old/src), the code with add.rn.bf16x2
    timeout 60 python3 benchmarks/check_keys_gpu.py
    CHECK_RAW="151936:32 262144:8" timeout 220 python3 benchmarks/check_sampler_gpu.py bias_edges raw_keys 2>&1 \
        | grep -v "'what': 'env'"
    mix_ab "" 130 --rows 32,128 --mix top_p,heavy --budget-ms 20 ;;
  bias133b) # run 133b (session 26): the bias change touches stage 1's code for every row: the standard mix and
            # verification (no bias) against the code before (.ab/old/src)
    mix_ab "" 200 --rows 1,32,128 --mix top_p --budget-ms 20
    verify_ab 150 1,32,128 ;;
  conv134)  # run 134 (session 26, a timing diagnostic): is the heavy mix's stage 1 bound by conversions? .ab/diag/src is the
            # tree's code with prologue.div_exact as an fp32 product (inexact: no F2F to and from fp64, used by the
            # temperature and the repetition penalty) and the counts' I2F as a bit trick; the tree against it,
            # alternating twice (labels: "new" the tree, "diag" the diagnostic)
    for r in 1 2; do
        echo "== new $r"
        timeout 120 python3 benchmarks/sampler_mix.py --vocab 151936 --out "$OUT/sample_mix.csv" --rows 32,128 \
            --mix heavy,processing --budget-ms 20
        echo "== diag $r"
        PYTHONPATH="$PWD/.ab/diag/src:$PYTHONPATH" timeout 150 python3 benchmarks/sampler_mix.py --vocab 151936 \
            --out "$OUT/sample_mix_diag.csv" --rows 32,128 --mix heavy,processing --budget-ms 20
    done ;;
  bias133)  # run 133 (session 26): a logit bias added only in the tile whose id range holds it (one scalar test per
            # entry, prologue.process SPAN) instead of a compare and a select per token and entry: the heavy and
            # processing mixes against the code before (.ab/old/src: `git archive <before> src`), then biases on
            # tile edges and penalised steps against the reference at production size
    mix_ab "" 200 --rows 1,32,128 --mix heavy,processing --budget-ms 20
    timeout 200 python3 benchmarks/check_sampler_gpu.py bias_edges penalty_steps 2>&1 | grep -v "'what': 'env'" ;;
  free131b) # run 131b: what free131's 120 s steps left out (the heavy mix) and verification (its target rows are
            # free) against a37a32c (.ab/old/src), with the Triton cache free131 packed
    mix_ab "" 150 --rows 1,32,128 --mix heavy --budget-ms 20
    verify_ab 150 1,32,128 ;;
  keys132b) # run 132b: what keys132's 170 s steps left out (the heavy mix at 128 rows), then raw-ranked rows and
            # mixed tokens at production sizes against the reference, on the branch's keys
    mix_ab "" 150 --rows 128 --mix heavy --budget-ms 20
    CHECK_RAW="151936:32 262144:8" timeout 150 python3 benchmarks/check_sampler_gpu.py raw_keys tokens 2>&1 \
        | grep -v "'what': 'env'" ;;
  keys132)  # run 132 (branch bf16-pair-keys, written in session 25, run in session 26): stage 1's bf16 keys of the grouped
            # tiles built two at a time in PTX (keys.bf16_tile_keys: one cvt.rn.bf16x2 rounds both, six
            # instructions a pair; about 5 per value fewer than the integer path in the sm_90 compile, spill
            # stores 22 -> 28). First the keys against the integer path over all 2**32 fp32 patterns (NaN
            # aside), then free rows and mixed rows against the reference, then the mixes against .ab/old
            # (carry main's src there: `git archive main src`), alternating. Right after free131, on the warm
            # machine, main's kernels are in its cache already.
    timeout 60 python3 benchmarks/check_keys_gpu.py
    CHECK_STRATEGIES=extract timeout 170 python3 benchmarks/check_sampler_gpu.py free_rows tokens_small 2>&1 \
        | grep -v "'what': 'env'"
    mix_ab "" 170 --rows 1,32,128 --mix top_p,heavy --budget-ms 20 ;;
  free131)  # run 131 (written in session 25, run in session 26): rows that need no full-vocabulary normalizer (indicator
            # NORMALIZER_FREE: stage 1 takes each tile's NaN-propagating maximum alone, no exponential per token)
            # against a37a32c (.ab/old/src). First the free rows with a NaN of either sign or a +inf far below their
            # maximum against the reference (the GPU's tl.max skips NaN, which the CPU's interpreter cannot show),
            # and mixed rows; then the mixes whose rows are free (standard, greedy, heavy), alternating. No graph
            # check: the bit is read at run time, no constexpr changed. Verification against the code before:
            # verify_ab in a second call.
    CHECK_STRATEGIES=extract timeout 170 python3 benchmarks/check_sampler_gpu.py free_rows tokens_small 2>&1 \
        | grep -v "'what': 'env'"
    mix_ab "" 120 --rows 1,32,128 --mix top_p,greedy,heavy --budget-ms 20 ;;
  raw129d)  # run 129d (not run in session 24; the first checks for session 25): rows ranked on raw keys against
            # the reference at each row configuration, verification, graph replay and compile count, long rows
            # (temperature rows beyond the bound, now ranked on raw keys) shared among standard ones; the other
            # mixes against the code before
    CHECK_RAW="151936:1 151936:32 151936:128 262144:8 32000:16" timeout 240 python3 benchmarks/check_sampler_gpu.py \
        raw_keys verify graph 2>&1 | grep -v "'what': 'env'"
    timeout 150 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 100 --rows 1,32,128 --mix min_p,standard_logprobs,top_p_no_k --budget-ms 20
    mix_ab " long" 100 --rows 16,128 --mix long_nucleus_1_in_16 --budget-ms 30 ;;
  greedy128g) # run 128g: the scalar argmax path inside the emission branch (stage 1's keys built only where the
              # emission needs them, as before): base, standard, greedy and heavy mixes against the code before
              # (.ab/old/src), alternating twice; greedy rows and mixed tokens against the reference
    mix_ab " 1" 150 --rows 1,32,128 --mix base,top_p,greedy,heavy --budget-ms 20
    mix_ab " 2" 100 --rows 1,32,128 --mix base,top_p,greedy,heavy --budget-ms 20
    CHECK_STRATEGIES=extract timeout 150 python3 benchmarks/check_sampler_gpu.py greedy tokens 2>&1 | grep -v "'what': 'env'" ;;
  greedy128f) # run 128f: the kept code (the path only in variants that skip candidates): mixed batches' tokens
              # (extract, rank), untruncated rows (whose stage-2 branch the greedy rows now share) against the
              # reference, and the base (untruncated) mix against the code before (.ab/old/src)
    CHECK_STRATEGIES=extract,rank timeout 250 python3 benchmarks/check_sampler_gpu.py tokens untruncated 2>&1 \
        | grep -v "'what': 'env'"
    mix_ab "" 120 --rows 1,32,128 --mix base --budget-ms 20 ;;
  greedy128b) # run 128b: what run 128 cut off: greedy rows in fp32 / fp16, graph replay and out=, then the heavy
              # and standard mixes (and greedy again) against the code before (.ab/old/src)
    timeout 200 python3 benchmarks/check_sampler_gpu.py greedy_dtypes graph out_buffers 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 170 --rows 1,32,128 --mix heavy,top_p,greedy --budget-ms 20 ;;
  greedy128) # run 128: greedy rows on the scalar argmax path (stage 1 writes each tile's argmax, stage 2 takes the
             # best over tiles; no candidates): greedy rows at production size against the reference (ties across
             # tiles, bf16 / fp32 / fp16), the mixed tokens, graph replay and out=; then the greedy, heavy (one row in
             # four greedy) and standard mixes against the code before (.ab/old/src)
    timeout 250 python3 benchmarks/check_sampler_gpu.py greedy tokens graph out_buffers 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 150 --rows 1,32,128 --mix greedy,heavy,top_p --budget-ms 20 ;;
  host121)  # run 121: the lean eager path (launch._direct: each key's launch bound in a generated function; sample's
            # checks of device slots / positions and out= kept for the same objects; addresses read once) against
            # the code before, in one process (.ab/old/src copied as package sonicsampler_old); production-size
            # checks of sample / verify (eager, out=, graph) through the direct launches; the standard mix's GPU
            # times (should not move); verification's host time; the admission probes
    rm -rf .ab/pkg && mkdir -p .ab/pkg && cp -r .ab/old/src/sonicsampler .ab/pkg/sonicsampler_old
    timeout 150 python3 benchmarks/host_ab.py --old .ab/pkg --rows 1,32,128
    timeout 200 python3 benchmarks/check_sampler_gpu.py out_buffers graph verify_out_buffers 2>&1 | grep -v "'what': 'env'"
    CHECK_STRATEGIES=extract timeout 100 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 60 python3 benchmarks/verify_host.py 1 32
    timeout 60 python3 benchmarks/admission_time.py --probes
    timeout 100 python3 benchmarks/sampler_mix.py --rows 1,32,128 --mix top_p --budget-ms 20 --out "$OUT/sample_mix.csv" ;;
  admit120) # run 120: why run 119's admission took 32 ms behind busy work: four admissions timed, one profiled
    timeout 100 python3 benchmarks/admission_time.py ;;
  vout118)  # run 118: verify(out=...) at production size against a twin's fresh outputs (one-hot, dense, sparse
            # drafts, ragged counts) and in a CUDA graph, sample(out=...) again and the sampler's graph and
            # recompile checks (device slots and positions now checked for dtype and layout), production-size
            # tokens at V = 151936; verification's eager host time with out=
    timeout 300 python3 benchmarks/check_sampler_gpu.py verify_out_buffers out_buffers graph 2>&1 | grep -v "'what': 'env'"
    CHECK_STRATEGIES=extract timeout 120 python3 benchmarks/check_sampler_gpu.py tokens 2>&1 | grep -v "'what': 'env'"
    timeout 100 python3 benchmarks/verify_host.py 1 32 ;;
  vhost114) # run 114: verification's part of the launch plan kept (verification._launch_plan) against the code
            # before (.ab/old/src: 10a2f72's), eager host time alternating twice; then verification against the
            # reference at production size and its γ = 3 GPU time (should not move)
    for r in 1 2; do
        echo "== new"; timeout 90 python3 benchmarks/verify_host.py 1 32
        echo "== before"; PYTHONPATH="$PWD/.ab/old/src:$PYTHONPATH" timeout 90 python3 benchmarks/verify_host.py 1 32
    done
    timeout 120 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    timeout 70 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 1,32 \
        --impl sonicsampler --budget-ms 40 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  host113)  # run 113: the host-time breakdown again (run 112's stopped after its first row on a bug in the script),
            # two processes; the standard mix's host times with and without out=; verification γ = 3 at B = 128
    timeout 100 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,32,128
    timeout 100 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,32,128
    timeout 150 python3 benchmarks/sampler_mix.py --rows 1,32,128 --mix top_p --budget-ms 20 --out "$OUT/sample_mix.csv"
    timeout 120 python3 benchmarks/run.py --case verify --gamma 3 --vocab 151936 --rows 128 \
        --impl sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep -v "^ \|Warning\|warn" ;;
  out112)   # run 112: Sampler.sample(out=...), an engine's persistent output buffers: equal to fresh outputs at
            # production size, eager and in a CUDA graph; the host-time breakdown with and without them; the
            # standard mix's GPU and host times (host with out= too)
    timeout 200 python3 benchmarks/check_sampler_gpu.py out_buffers 2>&1 | grep -v "'what': 'env'"
    timeout 120 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,32,128
    timeout 200 python3 benchmarks/sampler_mix.py --rows 1,32,128 --mix top_p --budget-ms 30 --out "$OUT/sample_mix.csv" ;;
  prefetch111) # run 111: stage 1's L2 prefetch of the tile a program about a wave later loads (kernels/prefetch.py),
               # each distance alternating with none in one process: the top-k at 32 / 64 / 128 rows (results
               # compared with the table's configuration), the standard mix at 32 / 128 rows, the heavy mix at 128.
               # It lost (docs/PERFORMANCE.md, "Session 20"): the code is gone, commit 6deacc8 has it
    timeout 150 python3 benchmarks/prefetch_ab.py --vocab 151936 --rows 32,64,128 --prefetch 0,2048,3072,4096,0,3072 \
        --budget-ms 30 --out "$OUT/prefetch_ab.csv"
    timeout 240 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 32,128 --mix top_p --budget-ms 30 \
        --prefetch 0,1024,2048,4096,0,2048 --out "$OUT/sample_mix.csv"
    timeout 120 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 128 --mix heavy --budget-ms 30 \
        --prefetch 0,2048,0,2048 --out "$OUT/sample_mix.csv" ;;
  after110) # run 110 (written in session 19, not run): what run 109d cut off, the standard mix at 32 / 128 rows,
            # and verification (whose finish_request counts accepted tokens with the relaxed atomics too) against
            # 399c5dc (.ab/old/src): production-size verification against the reference, then γ = 3 timings
    timeout 170 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 150 --rows 1,32,128 --mix top_p --budget-ms 30
    verify_ab 120 1,32,128 ;;
  counts109) # run 109: penalty counts read only in the 32-token words the output mask marks, bitmask words
             # loaded once per group of 8 in stage 1's grouped layout: penalised batches over 4 steps against the
             # reference (32 / 128 rows), then the heavy mix against the code before (.ab/old/src) at 1 / 32 / 128 rows
    timeout 200 python3 benchmarks/check_sampler_gpu.py penalty_steps 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 180 --rows 1,32,128 --mix heavy --budget-ms 30 ;;
  counts109b) # run 109b: 1-D tiles back on the dense counts (84cce98): the heavy mix (and the standard mix, a
              # control) against the code before (.ab/old/src), then the heavy mix again, alternating
    mix_ab " 1" 280 --rows 1,32,128 --mix heavy,top_p --budget-ms 30
    mix_ab " 2" 90 --rows 1,32,128 --mix heavy --budget-ms 30 ;;
  claims108) # run 108: 64 chunks with fixed claims of 1 / 2 / 4 chunks per take (results do not depend on the
             # claim) against 16 chunks, the long nucleus 1 row in 16 at 1..128 rows, and the all-bounded batch
    timeout 330 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 1,16,32,64,128 --with long_chunks=64 \
        --long-claim 1,2,4 --mix long_nucleus_1_in_16 --budget-ms 30 --out "$OUT/sample_mix.csv"
    timeout 220 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 1,16,32,64,128 \
        --mix long_nucleus_1_in_16,top_p --budget-ms 30 --out "$OUT/sample_mix.csv" ;;
  claims107) # run 107: the shared passes at 16 and 64 chunks (one take per chunk, as run 106), then 64 chunks with
             # the kernel's guided claims (long_claim 0: several chunks per take while many are left): the long
             # nucleus 1 row in 16, and top-p without top-k (shares, no long row: what the extra helpers cost)
    timeout 290 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 1,16,128 --long-chunks 16,64 \
        --mix long_nucleus_1_in_16,top_p_no_k --budget-ms 30 --out "$OUT/sample_mix.csv"
    timeout 200 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 1,16,128 --with long_chunks=64 \
        --long-claim 0 --mix long_nucleus_1_in_16,top_p_no_k --budget-ms 30 --out "$OUT/sample_mix.csv" ;;
  claims107b) # run 107b: 64 chunks with guided claims against the reference at production size: long rows among
              # standard ones (16 / 128 rows), bitwise equal alone, lone-row and batch graph replays
    CHECK_LONG_CHUNKS=64 CHECK_LONG_CLAIM=0 timeout 400 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 \
        | grep -v "'what': 'env'" ;;
  chunks106) # run 106: the shared passes cut into 64 chunks instead of 16 (helper programs make up the difference
             # below 64 rows): the long nucleus batches at both counts, alternating, then 64 chunks' long rows
             # among standard ones against the reference, alone, and in graph replays
    timeout 230 python3 benchmarks/sampler_mix.py --vocab 151936 --rows 1,16,128 --mix long_nucleus_1_in_16 \
        --long-chunks 16,64 --budget-ms 30 --out "$OUT/sample_mix.csv"
    CHECK_LONG_CHUNKS=64 timeout 190 python3 benchmarks/check_sampler_gpu.py long_shared 2>&1 | grep -v "'what': 'env'" ;;
  ab105)    # run 105: the same change timed against the carried snapshot: issue 5's nucleus batches (the benchmark's
            # long nucleus keeps the full search; the mid one takes one search pass fewer) and the graph path's
            # standard and top-p-only mixes
    mix_ab "" 280 --rows 1,16,128 --mix top_p,top_p_no_k,mid_nucleus_1_in_16,long_nucleus_1_in_16 --budget-ms 30 ;;
  ab100)    # run 100: SHARED launches read the batch's MAY_EXCEED bits and share nothing without one (run 99's
            # +8-10% on the graph path); checks (a graph captured before a long and a processed raw-logprobs
            # request), then the graph path's mixes against the carried snapshot
    timeout 110 python3 benchmarks/check_sampler_gpu.py graph_late_long 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 230 --rows 1,16,32,128 --mix top_p,top_p_no_k,long_nucleus_1_in_16 --budget-ms 30 ;;
  graph99)  # run 99: device slots (the graph path) always take stage 2's SHARED variant: a graph captured before a
            # long request was admitted samples it exactly; the standard mix on that path against d3a1b33
    timeout 120 python3 benchmarks/check_sampler_gpu.py graph_late_long 2>&1 | grep -v "'what': 'env'"
    mix_ab "" 150 --rows 1,16,32,128 --mix top_p --budget-ms 40 ;;
  final87)  # run 87: issue 5's batches at the default 16 chunks: the long-row batches and the all-bounded one
            # at 1 / 16 / 32 / 128 rows (V = 151936), then at 16 / 128 rows at V = 262144
    timeout 300 python3 benchmarks/sampler_mix.py --rows 1,16,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40
    timeout 250 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 262144 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 40 ;;
  checks76) # run 76: what runs 73 and 75 cut off: verification's graph replay, then verification against the
            # reference at every size including γ = 7 and V = 262144
    timeout 150 python3 benchmarks/check_sampler_gpu.py verify_graph 2>&1 | grep -v "'what': 'env'"
    timeout 400 python3 benchmarks/check_sampler_gpu.py verify 2>&1 | grep -v "'what': 'env'" ;;
  long66)   # run 66: the long-row batches against the all-bounded one at V = 262144 (issue 5's second vocabulary)
    timeout 400 python3 benchmarks/sampler_mix.py --rows 16,128 --vocab 262144 --out "$OUT/sample_mix.csv" \
        --mix top_p,long_nucleus_1_in_16,long_min_p_1_in_16 --budget-ms 100 ;;
  host64)   # run 64: host time of an eager call with the bare C launch against Triton's runner, alternating
            # processes (SONICSAMPLER_BARE_LAUNCH), then graph replay of the sampler and verification, the
            # production-size tokens and verification against the reference (every launch bare)
    for i in 1 2; do
        SONICSAMPLER_BARE_LAUNCH=0 timeout 60 python3 benchmarks/profile_host.py 1 top_p 2>&1 | head -1 | sed 's/^/runner: /'
        timeout 60 python3 benchmarks/profile_host.py 1 top_p 2>&1 | head -1 | sed 's/^/bare:   /'
    done
    timeout 60 python3 benchmarks/profile_host.py 32 heavy 2>&1 | head -1
    CHECK_STRATEGIES=extract timeout 300 python3 benchmarks/check_sampler_gpu.py graph verify_graph tokens 2>&1 | grep -v "'what': 'env'" ;;
  mixes59)  # run 59: after stage 2's changes (runs 51-52), the mixes issue 4 names (heavy; top-20
              # raw logprobs beside the plain top-k mix) at 1 / 32 / 128 rows, then verification (γ = 3) against
              # FlashInfer's chain at V = 32768 (issue 6's 3x).
    timeout 260 python3 benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out "$OUT/sample_mix.csv" \
        --mix top_k,standard_logprobs,heavy
    timeout 260 python3 benchmarks/run.py --case verify --gamma 3 --vocab 32768 --rows 1,4,16,32,64,128 \
        --impl flashinfer.k_only,sonicsampler --budget-ms 60 --out "$OUT/verify.csv" 2>&1 | grep "^verify " ;;
  mixes2)   # the mixes the issues' ratios need (4: heavy, logprobs; 5: untruncated, 1 row in 16 long), graph
    timeout 340 python3 benchmarks/sampler_mix.py --rows 1,32,128 --out "$OUT/sample_mix.csv" \
        --mix base,top_k,top_p,standard_logprobs,heavy,long_nucleus_1_in_16
    timeout 170 python3 benchmarks/check_sampler_gpu.py graph 2>&1 | grep -v "'what': 'env'" ;;
  mixes)    # the figure-3 breakdown and the exactness mixes at 32 rows, then the host time
    timeout 420 python3 benchmarks/sampler_mix.py --rows 32 --out "$OUT/sample_mix.csv"
    timeout 60 python3 benchmarks/sampler_mix.py --host-breakdown --rows 1,32 ;;
  *) echo "usage: $0 topk|verify|verify_grid V [sample1]|longsets|longsets2|long|compare2|kernels|profile|tune|logprobs|stats|checks|compare|sweep|regs|division|compare3|noise|host|final|stages|mixes|mixes2|pdl|pdl2|final2|final3|compare4|diet_topk|diet2|diet3|tune32k|checks56|rank32|pdl64|mixes59|long60|long61|long62|host64|long65|long66|ncu67|stage68|stage69|tune70|final71|mixes72|logp73|logp74|logp75|checks76" >&2 ;;
esac
# in parts of at most 15 MiB (the device returns files of up to 16 MiB); join them here with
# `cat triton_cache.tgz.part* > .triton_cache.tgz`
echo "== packing the Triton cache at $SECONDS s"
tar -czf - -C "$TRITON_CACHE_DIR" . | split -b 15m - "$OUT/triton_cache.tgz.part" && ls -la "$OUT"/triton_cache.tgz.part*
