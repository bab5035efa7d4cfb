"""What the batch scripts (corpus2_manifest.py, corpus3_manifest.py, alfworld_manifest.py) share:
count a converted run's steps and calls, write a batch's manifest file, and merge a batch into
MANIFEST.json.

A batch script holds its runs' labels (label, why, loop_start, pattern, notes, ...), written by
reading each run before any detector ran on it. `write` adds `steps` and `stats` counted from the
files and writes convert/<name>; `merge` puts the batch into MANIFEST.json: a new file is appended
with `exit_status` null and `pattern_original` equal to `pattern`, as the earlier batches were; a
file already there gets the batch's values for the keys the batch holds, so that a label changed in
the script reaches the manifest, and keeps its other keys. MANIFEST.json is written as before
(indent 1, ASCII with escapes), so an unchanged batch leaves it byte for byte as it was.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.dirname(HERE)


def count(path):
    """Return the steps (non-empty lines) and tool calls of a run file."""
    steps = calls = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                steps += 1
                calls += len(json.loads(line).get("toolCalls") or [])
    return steps, calls


def write(runs, name):
    """Return the batch's entries with their counts, and write them to convert/<name>."""
    out = []
    for e in runs:
        s, c = count(os.path.join(TRACES, e["file"]))
        e = dict(e)
        e["steps"] = s
        # Counts go under "stats", as in MANIFEST.json: a top-level "toolCalls" key makes audit
        # read this file as a trace of steps when it walks testdata/traces.
        e["stats"] = {"steps": s, "toolCalls": c}
        out.append(e)
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return out


def merge(out):
    """Merge the entries that write returned into MANIFEST.json (see the module's doc)."""
    mpath = os.path.join(TRACES, "MANIFEST.json")
    with open(mpath, encoding="utf-8") as f:
        man = json.load(f)
    index = {e["file"]: i for i, e in enumerate(man)}
    for e in out:
        if e["file"] in index:
            man[index[e["file"]]].update(e)
            continue
        e = dict(e)
        e["exit_status"] = None
        e["pattern_original"] = e["pattern"]
        man.append(e)
    with open(mpath, "w", encoding="utf-8") as f:
        json.dump(man, f, indent=1, ensure_ascii=True)
        f.write("\n")
