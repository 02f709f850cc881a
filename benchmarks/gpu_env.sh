# Source at the start of a command on the GPU machine (no network there), from the repository root:
#     source benchmarks/gpu_env.sh && python3 benchmarks/run.py ...
# It installs the carried FlashInfer wheels (.whl/, carried with the call) into /tmp/site, puts
# src/ on the path for `import sonicsampler`, and sets what FlashInfer's JIT build needs.
# Sourced, so it never exits: a failed step prints a warning and the FlashInfer rows then say why.

_ss_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"

# 1. FlashInfer 0.6.1 + apache-tvm-ffi, without dependencies: the image already has the rest
#    (click, einops, nvidia-ml-py, packaging, requests, tabulate, ninja, numpy, tqdm, torch).
if ls "$_ss_root"/.whl/*.whl >/dev/null 2>&1; then
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site "$_ss_root"/.whl/*.whl \
        || echo "gpu_env: installing .whl/*.whl failed" >&2
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "gpu_env: no wheels in $_ss_root/.whl (name .whl in carry): FlashInfer rows will be skipped" >&2
fi

# 2. The library itself, from the tree (no build step needed for a src/ layout of pure Python + Triton).
export PYTHONPATH="$_ss_root/src:$_ss_root:$PYTHONPATH"

# 3. FlashInfer JIT: a cache folder (a carried .fi_cache reuses modules built by an earlier run),
#    Hopper's arch-specific target, and the real toolkit (its guess goes wrong when nvcc is a wrapper).
if [ -d "$_ss_root/.fi_cache" ]; then
    export FLASHINFER_WORKSPACE_BASE="$_ss_root/.fi_cache"
else
    export FLASHINFER_WORKSPACE_BASE=/tmp/fi_cache
    mkdir -p "$FLASHINFER_WORKSPACE_BASE"
fi
export FLASHINFER_CUDA_ARCH_LIST=9.0a

_ss_cuda=""
if command -v nvcc >/dev/null 2>&1; then
    _ss_cuda="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
fi
if [ -z "$_ss_cuda" ] || { [ ! -f "$_ss_cuda/include/cuda_runtime.h" ] \
        && [ ! -f "$_ss_cuda/targets/x86_64-linux/include/cuda_runtime.h" ]; }; then
    _ss_cuda=/usr/local/cuda
fi
export CUDA_HOME="$_ss_cuda"

# 4. FlashInfer's sampling sources include <curand.h>. When the toolkit lacks it, take the headers of
#    the nvidia-curand wheel that PyTorch's CUDA 13 build depends on (nvidia/cu13/include or
#    nvidia/curand/include, depending on the wheel's layout).
if [ ! -f "$CUDA_HOME/include/curand.h" ] && [ ! -f "$CUDA_HOME/targets/x86_64-linux/include/curand.h" ]; then
    _ss_curand="$(python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
for root in roots:
    hits = sorted(glob.glob(os.path.join(root, "**", "curand.h"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        break
PY
)"
    if [ -n "$_ss_curand" ]; then
        export FLASHINFER_EXTRA_CUDAFLAGS="${FLASHINFER_EXTRA_CUDAFLAGS:+$FLASHINFER_EXTRA_CUDAFLAGS }-isystem $_ss_curand"
    else
        echo "gpu_env: curand.h found neither in $CUDA_HOME nor in the nvidia wheels" >&2
    fi
fi

export PYTHONUNBUFFERED=1  # progress lines reach the reply even if the command is cut off
echo "gpu_env: CUDA_HOME=$CUDA_HOME FLASHINFER_WORKSPACE_BASE=$FLASHINFER_WORKSPACE_BASE" \
     "FLASHINFER_EXTRA_CUDAFLAGS=${FLASHINFER_EXTRA_CUDAFLAGS:-}" >&2
unset _ss_root _ss_cuda _ss_curand
