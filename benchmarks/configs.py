"""Top-k launch configurations named on a command line or in an environment variable."""
from sonicsampler.tuning import TopKConfig


def parse_configs(text: str) -> list[TopKConfig]:
    """'strategy/block/emit/warps1[/warps2[/prefetch]]' entries separated by commas or spaces (warps2
    defaults to 8, prefetch, stage 1's L2 prefetch distance in programs, to 0)."""
    out = []
    for c in text.replace(",", " ").split():
        st, b, e, w1, *rest = c.split("/")
        w2, pf = (list(map(int, rest)) + [8, 0][len(rest):])[:2]
        out.append(TopKConfig(block=int(b), emit=int(e), warps1=int(w1), warps2=w2, strategy=st, prefetch=pf).check())
    return out
