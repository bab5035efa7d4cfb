#!/usr/bin/env python3
"""Convert a SWE-agent .traj file (JSON with "trajectory": [{action, observation, thought, response}])
to loopguard steps.

Rerun:
  git --git-dir=/work/.mirror/SWE-agent+SWE-agent/repo show \
      3ea751c087f32b16e039a2233dd6eefecef325d5:"tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj" \
    | python3 testdata/traces/convert/coding/sweagent_traj.py > testdata/traces/sweagent-gpt4-pydicom-1458.jsonl

One step per trajectory entry. SWE-agent parses a shell-like command from the model's text, so
name = the command's first word (edit, open, python, submit, ...), args = {"command": the action
text without its trailing newline}; text = the entry's "thought". SWE-agent records no exit codes;
the one failure it marks itself is its edit linter refusing an edit ("Your proposed edit has
introduced new syntax error(s)" -> error "edit rejected: syntax error"). The model_stats of the
run go to stderr only (no per-step usage is recorded).
"""
import json
import sys

CUT_OVER = 16 * 1024


def cut(s):
    if s is None:
        return s
    b = s.encode("utf-8")
    if len(b) <= CUT_OVER:
        return s
    head = b[:8192].decode("utf-8", "ignore")
    tail = b[-4096:].decode("utf-8", "ignore")
    return head + "...[%d bytes cut]..." % (len(b) - 8192 - 4096) + tail


def main():
    d = json.load(sys.stdin)
    for e in d["trajectory"]:
        action = e.get("action") or ""
        act = action.rstrip("\n")
        obs = e.get("observation")
        words = act.strip().split()
        call = {"name": words[0] if words else "", "args": {"command": act}, "result": cut(obs), "error": None}
        if isinstance(obs, str) and obs.lstrip().startswith("Your proposed edit has introduced new syntax error(s)"):
            call["error"] = "edit rejected: syntax error"
        step = {"text": e.get("thought") if e.get("thought") is not None else e.get("response", ""),
                "toolCalls": [call] if act.strip() else []}
        print(json.dumps(step, ensure_ascii=False))
    print(json.dumps((d.get("info") or {}).get("model_stats")), file=sys.stderr)


if __name__ == "__main__":
    main()
