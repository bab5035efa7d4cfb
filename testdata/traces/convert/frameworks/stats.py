#!/usr/bin/env python3
"""Descriptive counts for the manifest's "stats" (the same keys as testdata/traces/MANIFEST.json).
Run after labelling, never to decide a label:  python3 testdata/traces/convert/frameworks/stats.py testdata/traces/NAME.jsonl
- maxIdenticalConsecutiveToolStep: longest run of consecutive steps with the same non-empty list
  of calls (name + args); maxIdenticalToolCallRunIgnoringTextOnlySteps: the same, skipping steps
  without calls; longestCycle: longest stretch where step i has the signature of step i-p
  (p = 2 or 3; signature = calls, or text when there are none) and that is not a period-1 run;
  maxTextOnlyStreak: longest run of steps without calls; maxIdenticalFullStepRun: longest run of
  byte-identical steps (text, calls, results)."""
import json
import sys


def sig_calls(s):
    return json.dumps([[c.get("name"), c.get("args")] for c in s.get("toolCalls", [])], sort_keys=True)


def longest_run(seq, ok=lambda x: True):
    best = (0, None)
    i = 0
    while i < len(seq):
        if not ok(seq[i]):
            i += 1
            continue
        j = i
        while j + 1 < len(seq) and seq[j + 1] == seq[i]:
            j += 1
        if j - i + 1 > best[0]:
            best = (j - i + 1, i + 1)
        i = j + 1
    return {"length": best[0], "start": best[1]}


def stats(steps):
    calls = [sig_calls(s) for s in steps]
    nonempty = [c for c in calls if c != "[]"]
    # run over steps with calls only, start reported as 1-based step number
    idx = [i for i, c in enumerate(calls) if c != "[]"]
    r = longest_run(nonempty)
    r2 = {"length": r["length"], "start": (idx[r["start"] - 1] + 1) if r["start"] else None}
    sig = [c if c != "[]" else "T:" + s.get("text", "") for c, s in zip(calls, steps)]
    cyc = None
    for p in (2, 3):
        i = p
        while i < len(sig):
            if sig[i] == sig[i - p] and len(set(sig[i - p : i])) > 1:
                j = i
                while j + 1 < len(sig) and sig[j + 1] == sig[j + 1 - p]:
                    j += 1
                length = j - (i - p) + 1
                if length >= 2 * p and (cyc is None or length > cyc["length"]):
                    cyc = {"period": p, "start": i - p + 1, "length": length, "repetitions": round(length / p, 2)}
                i = j + 1
            else:
                i += 1
    text_only = [c == "[]" for c in calls]
    t = longest_run(text_only, ok=lambda x: x)
    full = [json.dumps(s, sort_keys=True) for s in steps]
    return {
        "steps": len(steps),
        "toolCalls": sum(len(s.get("toolCalls", [])) for s in steps),
        "maxIdenticalConsecutiveToolStep": longest_run(calls, ok=lambda x: x != "[]"),
        "maxIdenticalToolCallRunIgnoringTextOnlySteps": r2,
        "longestCycle": cyc,
        "maxTextOnlyStreak": t,
        "maxIdenticalFullStepRun": longest_run(full)["length"],
    }


if __name__ == "__main__":
    steps = [json.loads(l) for l in open(sys.argv[1])]
    print(json.dumps(stats(steps)))
