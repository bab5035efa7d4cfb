#!/usr/bin/env python3
"""Join sample.json (the draw) with the hand labels in labels_src.py into labels.json."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from labels_src import L
root = os.path.dirname(HERE)
sel = json.load(open(os.path.join(root, "sample.json")))
out = []
for i, s in enumerate(sel, 1):
    lab, ls, why = L[i]
    n = sum(1 for l in open(os.path.join(root, "runs", s["file"])) if l.strip())
    fb = "/F=gpt-4-0613/" in s["path"]
    out.append({"file": s["file"], "harness": "mint", "model": s["model"] + (" (GPT-4 textual feedback)" if fb else ""),
                "source_repo": "xingyaoww/mint-bench", "source_path": s["path"],
                "source_commit": "3f7f12c10bf763be1e6dbdeb42feb57624121f61", "license": "Apache-2.0",
                "task": s["task"], "steps": n, "label": lab, "loop_start": ls, "why": why, "picked": "random"})
json.dump(out, open(os.path.join(root, "labels.json"), "w"), indent=1, ensure_ascii=False)
from collections import Counter
print(Counter(o["label"] for o in out), len(out))
