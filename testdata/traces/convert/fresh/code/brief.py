#!/usr/bin/env python3
"""Reading aid: one line per step: n, command head, error, result head; marks a command identical to an earlier one."""
import json, sys
seen = {}
W = int(sys.argv[2]) if len(sys.argv) > 2 else 110
for i, l in enumerate(open(sys.argv[1]), 1):
    d = json.loads(l)
    cs = d.get("toolCalls", [])
    if not cs:
        print(f"{i:3d} [text] {(d.get('text') or '')[:W]!r} {json.dumps(d.get('meta',''))[:80]}")
    for c in cs:
        cmd = (c.get("args") or {}).get("command", "")
        key = cmd.strip()
        mark = f"=#{seen[key]}" if key in seen else ""
        seen.setdefault(key, i)
        r = (c.get("result") or "")
        r = r.replace("<returncode>0</returncode>\n<output>\n", "").replace("\n", "|")[:60]
        print(f"{i:3d} {mark:5s} {'E' if c.get('error') else ' '} {cmd.replace(chr(10),' ⏎ ')[:W]!r}  -> {r!r}")
