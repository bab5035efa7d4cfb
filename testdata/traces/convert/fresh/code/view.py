#!/usr/bin/env python3
"""Reading aid: print a converted run one step per line (text head, command, error, result head)."""
import json, sys
for i, l in enumerate(open(sys.argv[1]), 1):
    d = json.loads(l)
    W = int(sys.argv[2]) if len(sys.argv) > 2 else 160
    t = (d.get("text") or "").replace("\n", " ")[:W]
    print(f"{i:3d} T: {t}")
    if d.get("input"): print("    IN:", d["input"].replace("\n", " ")[:W])
    for c in d.get("toolCalls", []):
        cmd = json.dumps(c.get("args"), ensure_ascii=False)[:W*2]
        r = (c.get("result") or "").replace("\n", " | ")[:W]
        print(f"    C[{c.get('name')}] {cmd}")
        print(f"    {'ERR '+c['error'] if c.get('error') else 'ok'} R: {r}")
    if d.get("meta"): print("    META", json.dumps(d["meta"])[:W])
