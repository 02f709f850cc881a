# Run 130d (2026-11-26, NVIDIA H200, torch 2.11 / triton 3.6 as in the device image; tree at 60131b9 on main,
# kernels as 60650c0): an independent reviewer's call during session 25, kept as it was run (the device
# command, written compactly). NORMALIZER_FREE rows (top-k with temperature, top-k with a penalty, greedy,
# greedy with top-p) and a non-free top-p row at V = 32000, each with a NaN, a negative NaN or a +inf far from
# the maximum, bf16 / fp16 / fp32, with and without draft distributions, checked against reference.sample
# (tests/test_sampler.check_against_reference); then bf16 rows holding 3e38. Its output was not kept; the
# reviewer reported every check equal to the reference (RUNS.md, run 130d).
cat > /tmp/p.py <<'P'
import sys,dataclasses as D,torch;sys.path[:0]=['src','tests']
from sonicsampler import SamplingParams as P
from sonicsampler.sampler import Sampler
from test_sampler import check_against_reference as chk
V=32000;K=[P(top_k=20,temperature=0.7),P(top_k=20,repetition_penalty=1.3),P(temperature=0.0),P(temperature=0.0,top_p=0.5),P(top_p=0.9)]
NN={torch.bfloat16:(torch.int16,-64),torch.float16:(torch.int16,-512),torch.float32:(torch.int32,-4194304)}
for dt in NN:
 ps=[D.replace(p,seed=i*4+j) for i,p in enumerate(K) for j in range(4)];n=len(ps);pr=[[1,2,3]]*n;pos=list(range(n))
 for rd in (False,True):
  s=Sampler(V,n,'cuda')
  for i,p in enumerate(ps):s.add_request(i,p,pr[i])
  torch.manual_seed(0);L=(2*torch.randn(n,V,device='cuda')).to(dt)
  it,b=NN[dt];neg=torch.tensor([b],dtype=it).view(dt)[0]
  for i in range(n):
   w=i%4;L[i,30]=12.
   if w==0:L[i,25000]=float('nan')
   if w==1:L[i,25000]=neg
   if w==2:L[i,17000]=float('inf')
  o=s.sample(L,torch.arange(n),torch.tensor(pos),return_draft_probs=rd);torch.cuda.synchronize()
  print(dt,rd,o.valid.int().tolist(),flush=True)
  try:chk(L,ps,pos,pr,[()]*n,o);print('ok')
  except Exception as e:print('MISMATCH',repr(e)[:300])
 if dt==torch.bfloat16:
  s=Sampler(V,n,'cuda')
  for i,p in enumerate(ps):s.add_request(i,p,pr[i])
  L=(2*torch.randn(n,V,device='cuda')).to(dt);L[:,77]=3e38
  o=s.sample(L,torch.arange(n),torch.tensor(pos));print('big',o.valid.int().tolist(),o.tokens.tolist(),flush=True)
  try:chk(L,ps,pos,pr,[()]*n,o);print('ok')
  except Exception as e:print('MISMATCH',repr(e)[:300])
P
PYTHONUNBUFFERED=1 python3 /tmp/p.py 2>&1 | grep -v -i warn
