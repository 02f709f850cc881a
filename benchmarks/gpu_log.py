"""What the GPU check scripts share: a JSON-lines log under $OUT (flushed per line, so a run cut off by
its time limit keeps what it found), the environment row every results file starts with, and the count
of compiled variants of kernels (to show that new batch sizes compile nothing)."""
import json
import os
import time

import torch
import triton


class JsonLog:
    def __init__(self, name: str):
        out = os.environ.get("OUT", "out")
        os.makedirs(out, exist_ok=True)
        self._file = open(os.path.join(out, name), "a")

    def emit(self, **row):
        row["t"] = time.time()
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        print(row, flush=True)

    def emit_env(self):
        self.emit(what="env", gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                  commit=os.environ.get("BENCH_GIT_COMMIT", ""),
                  date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def compiled_variants(*kernels) -> tuple[int, ...]:
    """Compiled binaries held by each @triton.jit kernel's cache (-1 if the cache is not visible)."""
    def one(kernel):
        caches = getattr(kernel, "device_caches", None)
        return sum(len(c[0]) for c in caches.values()) if caches else -1
    return tuple(one(k) for k in kernels)
