"""Issue 22: would near-identical texts (instead of the exact normalised hash)
help the repeatedText rule? Reads the probe's dump (probe.go) and the manifest:

    go run ./testdata/traces/convert/neartext testdata/traces > /tmp/steps.jsonl
    python3 testdata/traces/convert/neartext/neartext.py /tmp/steps.jsonl testdata/traces/MANIFEST.json

Prints (1) how often a counted step's text (one that brings nothing new, as the
rule counts today) is near-identical to a step's in the last 10, per label;
(2) for each variant of the rule (threshold 3, window 10), what the default set
catches with it in place of today's rule, and which healthy or unclear runs it
stops. A variant's stop is masked on a step where the finish-reason rule stops
(it comes first), as in the guard. Similarities: Jaccard of word 3-shingles of
the normalised text, and a 64-bit SimHash of the same shingles (Hamming
distance). Standard library only.
"""
import collections
import hashlib
import json
import re
import sys

WIN, THR = 10, 3
WORD = re.compile(r"\w+")


def shingles(text, k=3):
    w = WORD.findall(text)
    if len(w) < k:
        return {tuple(w)} if w else set()
    return {tuple(w[i:i + k]) for i in range(len(w) - k + 1)}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a or b else 1.0


def simhash(sh):
    v = [0] * 64
    for s in sh:
        h = int.from_bytes(hashlib.blake2b(" ".join(s).encode(), digest_size=8).digest(), "little")
        for i in range(64):
            v[i] += 1 if h >> i & 1 else -1
    return sum(1 << i for i in range(64) if v[i] > 0)


def hamming(a, b):
    return bin(a ^ b).count("1")


def counts_today(r):
    return r["hasText"] and not r["progress"] and not r["refused"] and not r["label"] and not r["sameInput"]


def counts_sameinput(r):  # today's, with a repeated input counting too
    return r["hasText"] and not r["progress"] and not r["refused"] and not r["label"]


def counts_all(r):  # every step with text, as the first repeatedText did
    return r["hasText"] and not r["refused"] and not r["label"]


def exact(a, b):
    return a["text"] == b["text"]


def jac_at(t):
    return lambda a, b: a["text"] == b["text"] or jaccard(a["sh"], b["sh"]) >= t


def sim_at(k):
    return lambda a, b: a["text"] == b["text"] or hamming(a["sim"], b["sim"]) <= k


def fire(steps, near, counts):
    """The first step at which the variant stops and the guard shows it."""
    window = []
    for r in steps:
        c = counts(r)
        window.append(r if c else None)
        del window[:-WIN]
        if c and r["stop"] != "finish-reason":
            if sum(1 for o in window if o is not None and (o is r or near(o, r))) >= THR:
                return r["step"]
    return None


def main(dump, manifest):
    man = {e["file"]: e for e in json.load(open(manifest))}
    runs = collections.OrderedDict()
    for line in open(dump):
        r = json.loads(line)
        r["sh"] = shingles(r["text"])
        r["sim"] = simhash(r["sh"])
        runs.setdefault(r["file"], []).append(r)

    print("(1) counted steps whose text is near one of the last %d steps' (counted ones / any with text)" % WIN)
    tests = [("exact", exact), ("J>=0.9", jac_at(0.9)), ("J>=0.8", jac_at(0.8)), ("J>=0.7", jac_at(0.7)),
             ("SimHash<=3", sim_at(3)), ("SimHash<=10", sim_at(10))]
    for label in ("loops", "healthy", "unclear"):
        n, hit_c, hit_a = 0, collections.Counter(), collections.Counter()
        for f, steps in runs.items():
            if man[f]["label"] != label:
                continue
            for i, r in enumerate(steps):
                if not counts_today(r):
                    continue
                n += 1
                prev = steps[max(0, i - WIN + 1):i]
                for name, near in tests:
                    hit_c[name] += any(counts_today(o) and near(o, r) for o in prev)
                    hit_a[name] += any(o["hasText"] and near(o, r) for o in prev)
        print("  %-8s %4d counted steps: " % (label, n) + ", ".join(
            "%s %d/%d" % (name, hit_c[name], hit_a[name]) for name, _ in tests))

    # Today's stops by the other rules (and by the exact rule, which every variant includes).
    def base_stop(steps):
        return next((r["step"] for r in steps if r["stop"] not in ("", "finish-reason")), None)

    variants = [("exact (today)", exact, counts_today)]
    variants += [("J>=%.2f" % t, jac_at(t), counts_today) for t in (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)]
    variants += [("SimHash<=%d" % k, sim_at(k), counts_today) for k in (3, 6, 8, 10, 12, 14)]
    variants += [("exact, same input counts", exact, counts_sameinput),
                 ("J>=0.9, same input counts", jac_at(0.9), counts_sameinput),
                 ("J>=0.8, same input counts", jac_at(0.8), counts_sameinput),
                 ("exact, every text step", exact, counts_all),
                 ("J>=0.9, every text step", jac_at(0.9), counts_all),
                 ("J>=0.8, every text step", jac_at(0.8), counts_all)]
    print("\n(2) the default set with each variant of repeatedText (threshold %d, window %d)" % (THR, WIN))
    print("| variant | loops caught (of %d) | early | median lead | healthy stopped | unclear stopped | gained | lost |"
          % sum(1 for e in man.values() if e["label"] == "loops" and e["file"] in runs))
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    today = {}
    for name, near, counts in variants:
        caught, early, leads, healthy, unclear, gained, lost = set(), 0, [], [], [], [], []
        for f, steps in runs.items():
            e = man[f]
            b = base_stop(steps)
            v = fire(steps, near, counts)
            first = min((x for x in (b, v) if x is not None), default=None)
            ls = e.get("loop_start")
            if e["label"] == "loops":
                if first is not None and (ls is None or first + 1 >= ls):
                    caught.add(f)
                    if ls is not None:
                        leads.append(first + 1 - ls)
                elif first is not None:
                    early += 1
            elif first is not None:
                who = "%s (line %d%s)" % (f[:-6], first + 1, ", its last" if first == len(steps) - 1 else "")
                (healthy if e["label"] == "healthy" else unclear).append(who)
        if not today:
            today = set(caught)
        gained = sorted(f[:-6] for f in caught - today)
        lost = sorted(f[:-6] for f in today - caught)
        leads.sort()
        print("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
            name, len(caught), early, leads[len(leads) // 2] if leads else "-",
            "%d: %s" % (len(healthy), ", ".join(healthy)) if healthy else "0",
            "%d: %s" % (len(unclear), ", ".join(unclear)) if unclear else "0",
            ", ".join(gained) or "-", ", ".join(lost) or "-"))

    # (3) The margin: per run, the highest similarity level at which the
    # count reaches the threshold (Jaccard), and the smallest Hamming
    # distance that does (SimHash), with the step; missed loops and the
    # runs of the other labels, from the closest down.
    print("\n(3) the level at which each run would be stopped (runs caught today left out)")
    def level(steps, sim, counts):
        best = (None, None)
        window = []
        for r in steps:
            c = counts(r)
            window.append(r if c else None)
            del window[:-WIN]
            if not c or r["stop"] == "finish-reason":
                continue
            vals = sorted((sim(o, r) for o in window if o is not None and o is not r), reverse=True)
            if len(vals) >= THR - 1 and (best[0] is None or vals[THR - 2] > best[0]):
                best = (vals[THR - 2], r["step"])
        return best
    jsim = lambda a, b: 1.0 if a["text"] == b["text"] else jaccard(a["sh"], b["sh"])
    hsim = lambda a, b: 64 if a["text"] == b["text"] else 64 - hamming(a["sim"], b["sim"])
    for counts, what in ((counts_today, "steps counted today"), (counts_sameinput, "a repeated input counting too")):
        print("  %s:" % what)
        rows = []
        for f, steps in runs.items():
            if f in today:
                continue
            j, js = level(steps, jsim, counts)
            h, hs = level(steps, hsim, counts)
            if j is not None and j >= 0.5:
                rows.append((j, f[:-6], man[f]["label"], js, 64 - h if h is not None else None, hs))
        for j, f, label, js, h, hs in sorted(rows, reverse=True):
            print("    J %.3f (line %d)  SimHash %s (line %s)  %-8s %s" % (j, js + 1, h, hs + 1 if hs is not None else "-", label, f))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
