#!/usr/bin/env python3
"""Write testdata/traces/convert/alfworld-manifest.json: the entries of the ALFWorld runs (25 runs
of KnowAgent's released Llama-2-13b trajectories, zjunlp/KnowAgent), in MANIFEST.json's schema,
and merge them into MANIFEST.json.

Picked for three shapes of loop and their hard negatives: the same failing command again and again
('Nothing happens.'), a cycle of go-to/open/take between the same places, the same text-only
thought until the step cap; against runs that succeed while they get 'Nothing happens.' many
times, count up receptacles that do not exist, or walk the same route twice. Labels, `why`,
`pattern` and `loop_start` were written by reading each converted run before any detector ran on
it (none was run); `steps` and `stats` are counted from the files. The runs and their source lines
are listed in convert/alfworld/runs.tsv; convert/alfworld/build.sh rebuilds them;
convert/alfworld/NOTES.md has the conventions. Conventions of the merge as in corpus3_manifest.py.
"""
import os

import manifest_batch

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.dirname(HERE)

KA = dict(source_repo="zjunlp/KnowAgent", source_commit="82bc535f1ef2426ec883a548cb38961f9d1720ee",
          license="Apache-2.0", harness="knowagent", converter="convert/alfworld/knowagent_trajs.py",
          handwritten=False)

MODEL = {
    "D0": "llama-2-13b (KnowAgent self-learning, first round D0: prompted with KnowAgent's few-shot ReAct-style ALFWorld examples)",
    "D1": "llama-2-13b (KnowAgent self-learning, second round D1: after fine-tuning on filtered D0 trajectories)",
}
NOTE = {
    "D0": "KnowAgent ALFWorld train split, round D0; one model call per step, at most 50 calls.",
    "D1": "KnowAgent ALFWorld train split, round D1; one model call per step, at most 50 calls.",
}


def runs_tsv():
    out = {}
    with open(os.path.join(HERE, "alfworld", "runs.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            s, idx, game, fname = line.rstrip("\n").split("\t")
            out[fname] = (s, int(idx), game)
    return out


TSV = runs_tsv()


def ka(file, label, why, loop_start=None, pattern="none", notes=""):
    file = file + ".jsonl"
    s, idx, game = TSV[file]
    path = "Self-Learning/trajs/datas/KnowAgentALFWorld_llama-2-13b_%s.jsonl" % s
    e = dict(file=file, source_path="%s (line %d, game %s)" % (path, idx + 1, game), model=MODEL[s],
             label=label, why=why, loop_start=loop_start, pattern=pattern,
             notes=(NOTE[s] + (" " + notes if notes else "")), **KA)
    return e


P = "knowagent-alfworld-"

RUNS = [
    # 1. The same failing command again and again.
    ka(P + "d0-heat-apple-garbagecan-2", "loops",
       "Steps 4-50 send the identical `open fridge 1` 47 times (it never goes to the fridge), each answered 'Nothing happens.'; the run ends at the 50-call cap.",
       4, "identical-call-run"),
    ka(P + "d0-cool-plate-shelf-7", "loops",
       "It sees plate 1 on shelf 2 (step 6) but asks for it on shelf 3: steps 11-50 alternate the identical `take plate 1 from shelf 3` ('Nothing happens.', 20 times) with the identical thought 'I need to take the plate from shelf 3.' until the cap.",
       11, "failure-loop"),
    ka(P + "d0-heat-mug-cabinet-21", "loops",
       "Steps 4-15 `open` twelve receptacles it never went to (each 'Nothing happens.'); from step 16 it alternates 'I (still) cannot find a mug. Maybe I should check the room again.' with the identical `go to room` ('Nothing happens.', 17 times) until the cap.",
       16, "failure-loop", "Steps 4-15 are a failing sweep (new target each time, same answer); the loop proper starts at 16."),
    ka(P + "d1-puttwo-creditcard-desk-313", "loops",
       "After sweeping drawers 1-6 it reaches desk 1 (step 22), where no creditcard is listed; steps 24-50 alternate the identical thought 'Now I find the first creditcard. I can directly go to desk (1).' with `go to desk 1` ('Nothing happens.', 13 times, it is already there) until the cap.",
       24, "failure-loop"),
    # 2. Cycles between the same places.
    ka(P + "d0-clean-pan-fridge-1", "loops",
       "After `go to cabinet 13` fails (step 4), steps 5-50 alternate `open cabinet 13` / `close cabinet 13`, 23 times each, every one answered 'Nothing happens.'; ends at the cap.",
       5, "cycle"),
    ka(P + "d0-clean-dishsponge-shelf-401", "loops",
       "A 13-step tour (sinkbasin 1, `open sinkbasin 1` ['Nothing happens.'], cart 1, toilet 1, toilet paperhanger 1 ['Nothing happens.'], towelholder 2, shelf 4, each with the same thought) starts again at step 19 and repeats with identical observations at 32 and 45 until the cap.",
       19, "cycle", "Steps 4-17 are the first, exploring lap (it also sees shelf 3 there)."),
    ka(P + "d0-put-remotecontrol-dresser-311", "loops",
       "It sees remotecontrol 1 and 2 on armchair 1 (step 4) but never takes them, chasing a remotecontrol 3 it imagines on countertop 1; from step 23 a 13-step tour (dresser 1, `put remotecontrol 3 in/on dresser 1` ['Nothing happens.'], armchair 1, armchair 2, countertop 1, diningtable 1) repeats with identical thoughts and observations (23-35, 36-48) until the cap.",
       23, "cycle"),
    ka(P + "d1-puttwo-alarmclock-desk-304", "loops",
       "On bed 2 it 'finds' alarmclocks that are not there; from step 9 a 9-step cycle (`take alarmclock 3|2 from bed 2` ['Nothing happens.'], `go to bed 2` ['Nothing happens.'], bed 1, bed 2, the same thoughts) repeats five times with identical observations until the cap.",
       9, "cycle", "The cycle alternates alarmclock 3 and 2 in the take; everything else is identical."),
    ka(P + "d0-examine-bowl-desklamp-304", "loops",
       "After a short real sweep (drawer 1, laundryhamper 1, shelf 1 with the desklamp), steps 16-50 count through shelves that do not exist (`go to shelf 2` ... `go to shelf 19`), 18 'Nothing happens.' in a row with the same templated thought between, until the cap.",
       16, "same result from different args",
       "The failing twin of the healthy counting sweeps (knowagent-alfworld-d0-put-cd-dresser-323, -d1-examine-pencil-desklamp-306), which stop by themselves."),
    # 3. The same text-only thought until the cap.
    ka(P + "d0-cool-egg-microwave-24", "loops",
       "It finds, takes and cools the egg (19-28), but `put egg 1 in/on microwave 1` fails on the closed microwave (34); it declares the task impossible and steps 39-50 are the identical text-only thought 'The task is impossible to solve.' 12 times, with no action, until the cap.",
       39, "same-text"),
    ka(P + "d0-put-vase-sidetable-209", "loops",
       "It walks past the two vases on dresser 1 (step 4) and gives up at step 13; from step 16 it writes only 'End of Task' (33 times, with 'ActionPath: End' at 17 and 19) and no action until the 50-call cap.",
       16, "same-text", "The harness has no finish action, so a run that gives up can only stall until the cap."),
    ka(P + "d1-puttwo-keychain-shelf-207", "loops",
       "It puts the first keychain (13), then 'takes' and 'puts' a keychain 3 that is not there ('Nothing happens.' at 19 and 25); from step 28 it writes only 'I have finished the task.' (14 times, with ActionPath lines at 29 and 31) and no action until the harness stops at step 43.",
       28, "same-text", "Stopped before 50 calls: the harness stops when the prompt passes 4000 tokens."),

    # Hard negatives: counting up receptacles that do not exist, then progress.
    ka(P + "d0-put-cd-dresser-323", "healthy",
       "Steps 6-24 go to dresser 2 ... dresser 11, which do not exist (10 'Nothing happens.' in a row, each with the same templated thought); then it tries the garbagecan, finds cd 2, and puts it on dresser 1: success at step 35.",
       None, "same result from different args, then progress"),
    ka(P + "d1-examine-pencil-desklamp-306", "healthy",
       "Misses the desklamp on desk 1 (step 4), then 14 'Nothing happens.' from numbered receptacles that do not exist (desk 2-5, shelf 2-5, sidetable 2-5, and desk 1 while there) between the real shelf 1, sidetable 1 and garbagecan 1, each with the same templated thought; back at desk 1 it sees the lamp: success at 45.",
       None, "same result from different args, then progress"),
    # Hard negatives: sweeps and revisits.
    ka(P + "d1-examine-book-desklamp-302", "healthy",
       "Two laps over the same route: desk 1, desk 2 ('Nothing happens.'), shelves 1-5, bed 1 for the book (4-18), then the same route again for the lamp (24-38) with identical observations except bed 1; it goes on to sidetables 1-2 and finds the lamp: success at 45.",
       None, "sweep; second lap with identical observations"),
    ka(P + "d1-examine-newspaper-desklamp-225", "healthy",
       "Sweeps shelves 1-6 to sofa 1 for the newspaper (4-19), then desk 1 ('Nothing happens.'), sofa 2 and shelves 1-6 again for the lamp (26-36, observations identical to the first lap), then armchair, coffeetable and sidetable 1 with the lamp: success at 45.",
       None, "sweep; second lap with identical observations"),
    ka(P + "d0-examine-box-desklamp-205", "healthy",
       "Sweeps drawers 1-4, dresser 1 and sidetables 1-3 (4-22), takes the desklamp on sidetable 3 for a box and fails two actions ('Nothing happens.' at 25 and 29), finds box 1 on the sofa (31-34), then walks dresser 1 and sidetables 1-3 again (37-43, identical observations) to the lamp it saw before: success at 46.",
       None, "sweep; revisits"),
    ka(P + "d0-examine-cd-desklamp-307", "healthy",
       "Takes cd 4 from desk 1 (10), then looks for a desklamp over 16 go-tos: shelf 1, shelf 2 and desk 1 get three visits each and bed 1 two, gets 'Nothing happens.' 5 times (desk 1 while there, 'go to cd 4', drawer 3, 'go to cd 3', a wrong `use desklamp 1`), but keeps adding new places and finds the lamp on sidetable 1: success at 49.",
       None, "sweep; revisits"),
    ka(P + "d0-put-creditcard-shelf-307", "healthy",
       "Walks past creditcard 2 on desk 1 (step 4), sweeps drawers, shelves, garbagecan and laundryhamper (3 'Nothing happens.' for receptacles that do not exist), takes creditcard 3 from sidetable 1 (29), revisits shelf 2, shelf 3 ('Nothing happens.' again) and shelf 1, and puts it there: success at 39.",
       None, "sweep; revisits"),
    ka(P + "d1-examine-book-desklamp-304", "healthy",
       "Takes book 1 from shelf 1 (11), where the lamp also is, then makes 13 go-tos for the lamp (7 'Nothing happens.' from receptacles that do not exist, beds 1 and 2 visited twice) before going back to shelf 1 and using it: success at 43.",
       None, "sweep; revisits"),
    ka(P + "d0-examine-pillow-desklamp-301", "healthy",
       "Takes pillow 1 (7), then a 14-receptacle sweep for the lamp (desks 1-2, shelves 1-6, drawers 1-6, with 'Nothing happens.' for desk 2, shelf 2 and drawer 6) with a new observation at each real place; the lamp is on dresser 1: success at 43.",
       None, "sweep"),
    ka(P + "d0-examine-cellphone-desklamp-316", "healthy",
       "Takes cellphone 1 (6); the lamp search gets 'Nothing happens.' 8 times from 8 different commands (desk 1 while there, desk 2, shelf 2, sidetable 2, room 2, room 3, 'rest on bed 1', 'nap on bed 1'), never the same twice, then goes back to desk 1, sees the desklamp and uses it: success at 33.",
       None, "none", "It missed the desklamp listed on desk 1 at step 4."),
    ka(P + "d0-heat-apple-fridge-16", "unclear",
       "Opens fridge 1 four times from afar ('Nothing happens.', steps 4-7: the same failing call four times in a row, a short loop), then sweeps countertops and cabinets 27 down to 15 (9-50), each a new receptacle with a new observation; it missed the apple on countertop 1 (9) and is still sweeping at the 50-call cap.",
       None, "sweep",
       "A short identical run (4 calls) at the start that it leaves by itself. Read healthy first (a failure, not a loop); "
       "changed to unclear after the audit stopped it at its third identical call (line 6): four identical failing calls in a row "
       "are the repeated-call rule's loop by this corpus's conventions (threshold 3), and the run is neither a clean success nor a loop to the end."),

    # Unclear.
    ka(P + "d0-heat-egg-diningtable-18", "unclear",
       "Steps 4-19 are `open fridge 1` ... `open fridge 16` from the middle of the room, 16 'Nothing happens.' in a row with no thought between (the room has one fridge, and it never goes to it); then it finds, heats and puts the egg (21-38) and succeeds. A stall the agent ended itself, long enough to call a loop.",
       None, "same result from different args",
       "Compare knowagent-alfworld-d0-examine-bowl-desklamp-304 (the same counting, never ended: loops) and -d0-put-cd-dresser-323 (10 steps, healthy)."),
    ka(P + "d0-heat-egg-fridge-4", "unclear",
       "Every failing action is sent four times in a row (open fridge 1 and fridge 2 at 4-12; `put egg 3 in/on fridge 1` at 28-31 and 43-46; open fridge 3, fridge 4); between them it does progress (egg found, taken, heated at 14-22), but from 28 on it repeats the put-then-another-fridge plan, dropping the egg on countertop 2 at 40, until the cap.",
       None, "failure-loop", "Progress up to step 22; from 28 on a repeating plan with varying fridge numbers."),
]


def main():
    files = {e["file"] for e in RUNS}
    missing = sorted(set(TSV) - files)
    if missing or len(files) != len(RUNS):
        raise SystemExit("runs.tsv and RUNS differ: %s" % missing)
    out = manifest_batch.write(RUNS, "alfworld-manifest.json")
    manifest_batch.merge(out)


if __name__ == "__main__":
    main()
