#!/usr/bin/env python3
"""Final pass over runs/*.jsonl: a call the harness never answered has no `result` key (the
converters write null for it), per the step format."""
import json, sys
for p in sys.argv[1:]:
    steps = [json.loads(l) for l in open(p) if l.strip()]
    for s in steps:
        for c in s.get("toolCalls") or []:
            if c.get("result", "") is None:
                del c["result"]
    with open(p, "w") as f:
        for s in steps:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
