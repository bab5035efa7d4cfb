#!/usr/bin/env python3
"""Convert one MINT run (xingyaoww/mint-bench data/outputs/.../results.jsonl, one JSON per line)
to loopguard steps.

Rerun (the snapshot is a bare git dir; the file path and task id are in MANIFEST.json):
  python3 testdata/traces/convert/shortcap/mint_results.py \
      --git /work/.mirror/xingyaoww+mint-bench/repo --commit 3f7f12c10bf763be1e6dbdeb42feb57624121f61 \
      --path 'data/outputs/<model>/F=None/max5_p2+tool+cd/<group>/<task>/results.jsonl' \
      --task-id 17 > testdata/traces/mint-....jsonl

MINT gives the model k turns (5 in the runs kept here) and 2 chances to propose a solution.
state.history alternates assistant turns and user observations. One step per assistant turn:
- text: the turn without its <execute>/<solution> block (the <thought>, usually);
- a turn is parsed as MINT parses it: any "<solution>" makes it a proposal, else its closed
  <execute> blocks are run;
- <execute>CODE</execute> -> call "execute" {code} (several blocks joined by newlines); result = the IPython output that follows
  "Observation:"; where that output is a Python traceback (the kernel reports the cell as an
  error) the call's error is the exception's last line ("IndentationError: unexpected indent"), and for
  SyntaxError/IndentationError/TabError the line number IPython prints above it, as Python's
  own str() of such an error has it ("IndentationError: unexpected indent (line 4)");
- <solution>X</solution> -> call "propose_solution" {answer}; result = the harness's verdict
  ("Your answer is wrong.");
- neither -> call "invalid_action" {} with the harness's "I don't understand your input" reply as
  result and error "invalid action" (MINT counts these in agent_action_count.invalid_action).
  A turn without a block is kept as a call because the harness answers it like any action.
The harness's trailer "You have N steps left and M chances to propose solution left." is cut
from the result and kept in meta.turnsLeft. Feedback from the simulated expert (runs with
F=gpt-4-0613: "Expert feedback: ...") is the step's input on the NEXT step, as the model
read it. The last assistant turn gets no observation when the run ended on the cap.
"""
import argparse
import json
import re
import subprocess
import sys

TRAILER = re.compile(r"\n?You have \d+ steps? left and \d+ chances? to propose solution left\.\n?(You should take the last step to propose a solution\.\n?)?")
EXEC = re.compile(r"<execute>(.*?)</execute>", re.S)
SOL = re.compile(r"<solution>(.*?)</solution>", re.S)


def split_user(content):
    """Observation text, trailer, expert feedback of one user turn."""
    c = content
    fb = None
    i = c.find("\nExpert feedback:")
    if i >= 0:
        fb = c[i + 1:].strip()
        c = c[:i]
    m = TRAILER.search(c)
    trailer = None
    if m:
        trailer = m.group(0).strip()
        c = c[:m.start()] + c[m.end():]
    if c.startswith("Observation:\n"):
        c = c[len("Observation:\n"):]
    return c.rstrip("\n"), trailer, fb


def exc_line(out):
    if "Traceback (most recent call last)" not in out and not re.search(r"^\s*(File|Cell) .*line \d+", out, re.M):
        return None
    lines = [l for l in out.strip().splitlines() if l.strip()]
    for k in range(len(lines) - 1, -1, -1):
        l = lines[k]
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b", l):
            l = l.strip()
            if re.match(r"^(SyntaxError|IndentationError|TabError)\b", l):
                # str() of a SyntaxError carries its line ("invalid syntax (<cell>, line 4)");
                # IPython prints that line on the location line above instead.
                for j in range(k - 1, -1, -1):
                    m = re.search(r"line (\d+)\s*$", lines[j])
                    if m:
                        l += " (line %s)" % m.group(1)
                        break
            return l
    return None


def convert(rec):
    hist = rec["state"]["history"]
    steps = []
    pending_input = None
    i = 1
    while i < len(hist):
        h = hist[i]
        if h["role"] != "assistant":
            i += 1
            continue
        txt = h["content"]
        if txt.startswith("Assistant:\n"):
            txt = txt[len("Assistant:\n"):]
        obs = hist[i + 1]["content"] if i + 1 < len(hist) and hist[i + 1]["role"] == "user" else None
        out, trailer, fb = split_user(obs) if obs is not None else (None, None, None)
        # As mint/agents/base.py and mint/envs/general_env.py parse a turn: any "<solution>"
        # makes it a proposal (all closed <solution> blocks joined), otherwise all closed
        # <execute> blocks are joined and run; nothing found is a parse error.
        if "<solution>" in txt:
            name, key, rx = "propose_solution", "answer", SOL
        else:
            name, key, rx = "execute", "code", EXEC
        blocks = [m.group(1).strip() for m in rx.finditer(txt)]
        body = "\n".join(blocks)
        if body:
            call = {"name": name, "args": {key: body}, "result": out}
            text = rx.sub("", txt).strip()
            if name == "execute":
                err = exc_line(out) if out is not None else None
                if err:
                    call["error"] = err
        else:
            call = {"name": "invalid_action", "args": {}, "result": out}
            if out is not None and out.startswith("I don't understand your input"):
                call["error"] = "invalid action"
            text = txt.strip()
        if out is None:
            call.pop("result")
        step = {"text": text, "toolCalls": [call]}
        if pending_input:
            step["input"] = pending_input
        meta = {}
        if trailer:
            meta["turnsLeft"] = trailer
        if meta:
            step["meta"] = meta
        steps.append(step)
        pending_input = fb
        i += 2
    return steps


def load(args):
    if args.git:
        data = subprocess.run(["git", "--git-dir", args.git, "show", "%s:%s" % (args.commit, args.path)],
                              check=True, capture_output=True).stdout.decode("utf-8")
    else:
        data = open(args.path, encoding="utf-8").read()
    for line in data.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if str(rec["task"]["task_id"]) == str(args.task_id):
            return rec
    sys.exit("task id %s not found" % args.task_id)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--path", required=True)
    ap.add_argument("--task-id", required=True)
    args = ap.parse_args()
    rec = load(args)
    for st in convert(rec):
        print(json.dumps(st, ensure_ascii=False))
    s = rec["state"]
    print(json.dumps({"success": s.get("success"), "terminate_reason": s.get("terminate_reason"),
                      "agent_action_count": s.get("agent_action_count")}), file=sys.stderr)


if __name__ == "__main__":
    main()
