"""Grammar masks from a real XGrammar matcher over a small vocabulary built offline: the Sampler,
step after step, only ever emits allowed tokens, and equals the reference token for token."""
import pytest
import torch

from sonicsampler import SamplingParams, reference
from sonicsampler.sampler import Sampler

xgr = pytest.importorskip("xgrammar")

pytestmark = pytest.mark.interpreter

VOCAB = ['{', '}', '"', ':', ',', ' ', 'x', 'y', 'name', 'age', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
         'true', 'false', 'null', '[', ']', 'a', 'b', 'c', '"x"', '"y"', '": ', '12', '</s>', 'zz', '\n', '-']
STOP = VOCAB.index('</s>')
SCHEMA = ('{"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "boolean"}},'
          ' "required": ["x", "y"], "additionalProperties": false}')


def test_sampler_follows_a_json_schema_grammar():
    info = xgr.TokenizerInfo(VOCAB, vocab_size=len(VOCAB), stop_token_ids=[STOP])
    grammar = xgr.GrammarCompiler(info).compile_json_schema(SCHEMA)
    params = [SamplingParams(seed=1), SamplingParams(temperature=0.0), SamplingParams(temperature=1.5, seed=7,
              frequency_penalty=0.5, logprobs=2, logprobs_mode="processed")]
    n, v = len(params), len(VOCAB)
    s = Sampler(v, n, "cpu", bound=16, block=256)
    resolved = [s.add_request(i, p) for i, p in enumerate(params)]
    matchers = [xgr.GrammarMatcher(grammar) for _ in range(n)]
    outputs = [[] for _ in range(n)]
    gen = torch.Generator().manual_seed(0)
    done = [False] * n
    for step in range(40):
        mask = xgr.allocate_token_bitmask(n, v)
        for i, m in enumerate(matchers):
            if not done[i]:      # a finished request keeps an all-allowed row (its token is ignored)
                m.fill_next_token_bitmask(mask, i)
        logits = torch.randn(n, v, generator=gen).to(torch.bfloat16)
        out = s.sample(logits, list(range(n)), [step] * n, grammar_bitmask=mask)
        ref = reference.sample(logits, resolved, positions=[step] * n, output_token_ids=outputs,
                               grammar_bitmask=mask)
        for i in range(n):
            if done[i]:
                continue
            t = int(out.tokens[i])
            allowed = (int(mask[i, t // 32]) >> (t % 32)) & 1
            assert allowed, (step, i, VOCAB[t])
            assert bool(out.exact[i]) and t == int(ref.tokens[i]), (step, i, t, int(ref.tokens[i]))
            assert matchers[i].accept_token(t)
            outputs[i].append(t)
            done[i] = matchers[i].is_terminated()
        if all(done):
            break
    for i in range(n):   # every request produced a complete object and stopped
        assert done[i], (i, "".join(VOCAB[t] for t in outputs[i]))
        text = "".join(VOCAB[t] for t in outputs[i] if t != STOP)
        assert text.lstrip().startswith("{") and text.rstrip().endswith("}"), text
