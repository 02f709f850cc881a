"""Top-k launch configurations named on a command line or in an environment variable."""
from sonicsampler.tuning import TopKConfig


def parse_configs(text: str) -> list[TopKConfig]:
    """'strategy/block/emit/warps1[/warps2]' entries separated by commas or spaces (warps2 defaults
    to 8)."""
    out = []
    for c in text.replace(",", " ").split():
        st, b, e, w1, *w2 = c.split("/")
        out.append(TopKConfig(block=int(b), emit=int(e), warps1=int(w1), warps2=int(w2[0]) if w2 else 8,
                              strategy=st).check())
    return out
