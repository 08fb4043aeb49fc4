#!/usr/bin/env python3
"""Appends the row of an ended chunk of a fuzz campaign (scripts/campaign.sh) to the
Campaigns table of docs/reliability.md, after the last row of the same campaign, from the
chunk's summary: it refuses a chunk that did not run all its cases, found anything, or
ran another corpus.

usage: scripts/campaign-row.py COMMIT SEED FINGERPRINT FROM "NOTE" [CASES]
  NOTE says what else the machine did meanwhile ("the machine otherwise idle").
Campaigns live in $OP2_CAMPAIGNS (default /work/campaigns)."""
import os
import re
import sys

CAMPAIGNS = os.environ.get('OP2_CAMPAIGNS', '/work/campaigns')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
c, seed, fp, frm, note = sys.argv[1:6]
n = int(sys.argv[6]) if len(sys.argv) > 6 else 300000
frm = int(frm)
log = open(f'{CAMPAIGNS}/{c}-chunk-{frm}.log', errors='replace').read().replace('\r', '\n')
head = re.search(r'^(\d+) cases \(seed (\d+), cases (\d+)\.\.(\d+)\) in ([\d.]+) s: (\d+) cases/s with (\d+) jobs; (\d+) findings', log, re.M)
assert head, 'no summary line'
done, s, a, b, secs, rate, jobs, findings = head.groups()
assert s == seed and int(a) == frm and int(b) == frm + n and int(done) == n, head.group(0)
assert findings == '0', 'findings: ' + findings
st = re.search(r'^stages: parse, check and fmt (\d+); build (\d+); run and simulate (\d+) \((\d+) with values .*?; lsp sessions (\d+); ended in a finding (\d+)', log, re.M)
assert st, 'no stages line'
checked, built, ran, order, sessions, other = st.groups()
assert other == '0'
cp = re.search(r'^corpus: (\d+) programs from .*, fingerprint ([0-9a-f]+)', log, re.M)
assert cp and cp.group(2) == fp, ('fingerprint', cp and cp.group(0))
slow = re.search(r'^mean case .*?slowest in CPU time: seed \d+ case (\d+) \(([\d.]+) s of CPU', log, re.M)
assert slow, 'no slowest line'
times = open(f'{CAMPAIGNS}/{c}-chunks.txt').read().split('\n')
start = [l for l in times if l.startswith(f'start {frm} ')][-1].split()[2]
end = [l for l in times if l.startswith(f'end {frm} ')][-1].split()[3]
hm = lambda t: t.split('T')[1][:5]
day = start.split('T')[0]
k = frm // n + 1
def g(x): return f'{int(x):,}'
row = (f'| {day} | **the campaign of {c}, chunk {k}**: the same binary | {seed} | **{g(frm)}..{g(frm+n)}** | the same | the same | '
       f'{float(secs):.1f} s ({hm(start)} to {hm(end)} UTC, {note}: {rate} cases/s) | corpus fingerprint `{fp}`. '
       f'Parse, check and fmt for {g(checked)}; build for {g(built)}; run and simulate (and run compiled and on two threads) for {g(ran)} '
       f'({order} with order-dependent values that differed, not compared, or explained by another order); '
       f'{g(sessions)} language server sessions (half building on save), no stray write. '
       f'No finding; the slowest case {float(slow.group(2)):.2f} s of CPU ({slow.group(1)}) |')
p = os.path.join(ROOT, 'docs', 'reliability.md')
lines = open(p).read().split('\n')
last = max(i for i, l in enumerate(lines) if l.startswith('| 20') and f'the campaign of {c}' in l)
lines.insert(last + 1, row)
open(p, 'w').write('\n'.join(lines))
print(row)
