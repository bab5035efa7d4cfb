#!/usr/bin/env python3
"""Draw the random MINT sample. Population: every (results.jsonl, task id) pair of
max5_p2+tool+cd under F=None and F=gpt-4-0613/PHF=no_GT-textual, all models, minus the corpus's
MINT runs (MANIFEST.json harness "mint" + build_mint.sh). Seed 20261203.
Rule: sort the population, shuffle with random.Random(20261203), walk the shuffled list and take a
pair unless its model already has 6, or taking it would leave too few slots for every task group
(reasoning, code_generation, decision_making) to reach 8."""
import json, random, re, subprocess, sys
G = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/xingyaoww+mint-bench/repo"
C = "3f7f12c10bf763be1e6dbdeb42feb57624121f61"
N, MAXM, MING = 40, 6, 8
GROUPS = ["reasoning", "code_generation", "decision_making"]
def git(*a):
    return subprocess.run(["git", "--git-dir", G] + list(a), check=True, capture_output=True).stdout.decode()
files = [p for p in git("ls-tree", "-r", "--name-only", C, "data/outputs").splitlines()
         if p.endswith("/results.jsonl") and re.match(r"data/outputs/[^/]+/(F=None|F=gpt-4-0613/PHF=no_GT-textual)/max5_p2\+tool\+cd/", p)]
excl = set()
for e in json.load(open("/work/main/testdata/traces/MANIFEST.json")):
    if e.get("harness") == "mint":
        m = re.match(r"(.*results\.jsonl) \(task_id (.*)\)$", e["source_path"])
        excl.add((m.group(1), m.group(2)))
for l in open("/work/main/testdata/traces/convert/shortcap/build_mint.sh"):
    m = re.match(r'run \S+ "\$D/(.*)" (\S+)\s*$', l)
    if m:
        excl.add(("data/outputs/" + m.group(1), m.group(2)))
pop = []
dups = 0
for p in files:
    seen = set()
    for line in git("show", "%s:%s" % (C, p)).splitlines():
        if not line.strip():
            continue
        tid = str(json.loads(line)["task"]["task_id"])
        if tid in seen:
            dups += 1
            continue
        seen.add(tid)
        if (p, tid) not in excl:
            pop.append((p, tid))
pop.sort()
print("files", len(files), "excluded", len(excl), "population", len(pop), "duplicate ids skipped", dups, file=sys.stderr)
rng = random.Random(20261203)
rng.shuffle(pop)
sel, mc, gc = [], {}, {g: 0 for g in GROUPS}
for p, tid in pop:
    if len(sel) == N:
        break
    parts = p.split("/")
    model = parts[2]
    group = parts[parts.index("max5_p2+tool+cd") + 1]
    if mc.get(model, 0) >= MAXM:
        continue
    gc2 = dict(gc); gc2[group] += 1
    need = sum(max(0, MING - v) for v in gc2.values())
    if need > N - len(sel) - 1:
        continue
    sel.append({"path": p, "task": tid, "model": model, "group": group})
    mc[model] = mc.get(model, 0) + 1
    gc = gc2
print("groups", gc, file=sys.stderr)
print("models", mc, file=sys.stderr)
json.dump(sel, sys.stdout, indent=1)
