"""Top-k launch configurations named on a command line or in an environment variable."""
from sonicsampler.tuning import TopKConfig


def parse_configs(text: str) -> list[TopKConfig]:
    """'strategy/block/emit/warps1' entries separated by commas or spaces (stage 2 runs 8 warps)."""
    out = []
    for c in text.replace(",", " ").split():
        st, b, e, w = c.split("/")
        out.append(TopKConfig(block=int(b), emit=int(e), warps1=int(w), warps2=8, strategy=st).check())
    return out
