"""Rebuild the sampling population and the seeded draw (see NOTES.md).

  python3 population.py > ../population.json
Reads the bare snapshots under /work/.mirror; needs the converters here.
tau-bench: every (task_id, trial) entry of historical_trajectories/gpt-4o-airline.json
  @59a200c (the only historical file under 4 MiB), minus the 12 already used.
tau2-bench: every simulation of every results-shaped JSON (a dict with
  "simulations": [{"messages": ...}]) reachable from any ref (branches, PR refs),
  minus output-template.json, minus the older copy of the two toolorchestra files
  (commit 8cf85f2; the 4c87b43 copy is kept), minus simulations already used,
  minus simulations that convert to 0 agent steps.
Draw: rng = random.Random(20261203); rng.sample(taubench, 15); rng.sample(tau2, 15).
"""
import json, random, subprocess, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../../tool-use")  # the corpus converters
import tau2_results, taubench_hist  # noqa: E402

TAU = '/work/.mirror/sierra-research+tau-bench/repo'
TAU2 = '/work/.mirror/sierra-research+tau2-bench/repo'
TBC = '59a200c6d575d595120f1cb70fea53cef0632f6b'
MANIFESTS = ['/work/main/testdata/traces/MANIFEST.json',
             '/work/shared/traces/set-a/MANIFEST.json',
             '/work/shared/traces/set-b/MANIFEST.json']


def git(repo, *a):
    return subprocess.run(['git', '-C', repo] + list(a), capture_output=True).stdout


def used_paths():
    out = []
    for p in MANIFESTS:
        for x in json.load(open(p)):
            if 'tau' in (x.get('source_repo') or ''):
                out.append(x.get('source_path', ''))
    return out


def taubench(used):
    d = json.loads(git(TAU, 'show', TBC + ':historical_trajectories/gpt-4o-airline.json'))
    c = []
    for e in d:
        tag = 'historical_trajectories/gpt-4o-airline.json (entry task_id=%d, trial=%d)' % (e['task_id'], e['trial'])
        if tag in used or not taubench_hist.convert(e):
            continue
        c.append(('historical_trajectories/gpt-4o-airline.json', e['task_id'], e['trial']))
    return sorted(c)


def tau2(used):
    objs = [l.split(' ', 1) for l in git(TAU2, 'rev-list', '--all', '--objects', '--missing=allow-any').decode().splitlines()]
    seen, files = set(), []
    for h, p in [o for o in objs if len(o) == 2 and o[1].endswith('.json')]:
        if h in seen:
            continue
        seen.add(h)
        try:
            d = json.loads(git(TAU2, 'cat-file', 'blob', h))
        except ValueError:
            continue
        sims = d.get('simulations') if isinstance(d, dict) else None
        if not (isinstance(sims, list) and sims and isinstance(sims[0], dict) and 'messages' in sims[0]):
            continue
        if p.endswith('output-template.json'):
            continue
        commits = [c for c in git(TAU2, 'log', '--all', '--format=%H', '--find-object=' + h, '--', p).decode().split() if c]
        commit = [c for c in commits if git(TAU2, 'rev-parse', c + ':' + p).decode().strip() == h][-1]
        if commit.startswith('8cf85f21'):
            continue
        files.append((p, commit, sims))
    c = []
    for p, commit, sims in files:
        for i, s in enumerate(sims):
            tid = s.get('task_id')
            hit = [u for u in used if u.startswith(p + ' ') and ('simulations[%d]' % i in u or 'task_id=%s,' % tid in u or 'task_id=%s)' % tid in u)]
            n = len(tau2_results.convert(s))
            if hit or n == 0:
                continue
            c.append(dict(path=p, commit=commit, index=i, task_id=tid, trial=s.get('trial'), steps=n))
    c.sort(key=lambda x: (x['path'], x['index']))
    return c


def main():
    used = used_paths()
    tb, t2 = taubench(used), tau2(used)
    rng = random.Random(20261203)
    a = rng.sample(tb, 15)
    b = rng.sample(t2, 15)
    json.dump({'taubench_population': tb, 'tau2_population': t2, 'taubench_draw': a,
               'tau2_draw': b}, sys.stdout, indent=0)


if __name__ == '__main__':
    main()
