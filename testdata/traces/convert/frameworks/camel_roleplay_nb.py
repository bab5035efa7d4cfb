#!/usr/bin/env python3
"""Convert the printed transcript of a CAMEL RolePlaying session (a cookbook notebook cell's
output) into loopguard steps: one step per "AI Assistant:" turn (the assistant agent is the one
watched), input = the preceding "AI User:" message (the AI user's instruction). Tool calls are
the "Function Execution:" records, or CAMEL's newer "Tool Execution:" ones; a record in a reply
without "Solution:" ends at the reply's first blank line; AgentOps' log lines are no model output
(the fresh batch's two CAMEL runs need these; the four earlier runs convert as before).

Rerun:
  git --git-dir=/work/.mirror/camel-ai+camel/repo show COMMIT:docs/cookbooks/PATH.ipynb \
    | python3 testdata/traces/convert/frameworks/camel_roleplay_nb.py --cell N > testdata/traces/NAME.jsonl

Tool calls are printed by the cookbook as FunctionCallingRecord strings, concatenated without a
separator: "Function Execution: NAME\\n\\tArgs: {python dict}\\n\\tResult: ...". A record's result
ends where the next record starts; the last one ends where the assistant's reply begins, i.e. at
the first "Solution:" after it (CAMEL's assistant prompt makes every reply start with
"Solution:"). CAMEL marks no tool failure, so no "error" is set. The final "AI User:" turn
(<CAMEL_TASK_DONE>) is not an assistant step and is left out.
"""
import argparse
import ast
import json
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TURN = re.compile(r"^(AI User|AI Assistant):[ \t]*", re.M)
REC = re.compile(r"(?:Function|Tool) Execution: ([A-Za-z0-9_\-\.]+)\s*\n\tArgs: (.*?)\n\tResult: ", re.S)
LIMIT = 16 * 1024


def cap(s):
    b = s.encode("utf-8")
    if len(b) <= LIMIT:
        return s
    head = b[:8192].decode("utf-8", "ignore")
    tail = b[-4096:].decode("utf-8", "ignore")
    return head + "...[%d bytes cut]..." % (len(b) - len(head.encode()) - len(tail.encode())) + tail


def parse_args(s):
    try:
        v = ast.literal_eval(s.strip())
        if isinstance(v, dict):
            return v
    except (ValueError, SyntaxError):
        pass
    return {"raw": s}


def assistant_step(body):
    recs = list(REC.finditer(body))
    if not recs:
        return {"text": body.strip(), "toolCalls": []}
    calls = []
    text = ""
    for k, m in enumerate(recs):
        start = m.end()
        if k + 1 < len(recs):
            res = body[start : recs[k + 1].start()]
        else:
            j = body.find("Solution:", start)
            if j >= 0:
                res, text = body[start:j], body[j:]
            else:
                # no "Solution:" (prompts without it): the record is printed on its own,
                # then a blank line, then the reply; results in these cells are one paragraph.
                k2 = body.find("\n\n", start)
                res, text = (body[start:k2], body[k2:]) if k2 >= 0 else (body[start:], "")
        calls.append({"name": m.group(1), "args": parse_args(m.group(2)), "result": cap(res.rstrip("\n"))})
    pre = body[: recs[0].start()].strip()
    return {"text": (pre + "\n\n" + text.strip()).strip() if pre else text.strip(), "toolCalls": calls}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cell", type=int, required=True)
    a = ap.parse_args()
    nb = json.load(sys.stdin)
    cell = nb["cells"][a.cell]
    text = "".join(
        "".join(o["text"]) if isinstance(o.get("text"), list) else o.get("text", "")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    text = ANSI.sub("", text)
    # AgentOps' own log lines ("🖇 AgentOps: Could not record event ...") are no model output.
    text = re.sub(r"^\s*🖇 AgentOps:.*$\n?", "", text, flags=re.M)
    parts = TURN.split(text)
    pending = None
    for j in range(1, len(parts), 2):
        who, body = parts[j], parts[j + 1]
        if who == "AI User":
            pending = body.strip()
            continue
        step = assistant_step(body)
        if pending is not None:
            step["input"] = pending
            pending = None
        sys.stdout.write(json.dumps(step, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
