#!/usr/bin/env python3
"""Convert one attempt of an AutoGPT agbenchmark report (Significant-Gravitas/AutoGPT,
benchmark/reports/autogpt/<run>/report.md) to loopguard steps.

Rerun (the report is 300+ KB; the AutoGPT repository is over the snapshot limit here, so the
runs in the corpus were converted from the report's text as read through the code index):
  python3 testdata/traces/convert/autogpt/agbenchmark_report.py report.md \
      --task AnswerQuestionCombineCsv --attempt 3 > testdata/traces/autogpt-....jsonl

The report prints each attempt as numbered "Steps". Step k shows the result of the command of
step k-1 ("`cmd(args)` returned: RESULT"), then the model's thought, then its next command
("Next Command: cmd(args)"). One loopguard step per model turn:
- text: the thought;
- the command -> call {name: cmd, args: its keyword arguments (parsed as Python literals)},
  result: what the next report step says it returned; "Action failed: '...'" (AutoGPT's own
  failure report) -> error = the quoted message;
- a turn that asks the user (ask_user) is printed as the thought and then the question, without
  "Next Command": call "ask_user" {question}; the benchmark gives no answer, and the report
  prints none, so the call has no result;
- the last turn's command has no result (the attempt ended: cutoff or step limit); a final report
  step that only prints finish()'s reason is not a model turn and is dropped.
"""
import argparse
import ast
import json
import re
import sys

STEP = re.compile(r"^   (\d+)\. ", re.M)


def call_of(cmd):
    cmd = cmd.strip()
    try:
        node = ast.parse(cmd, mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            for i, a in enumerate(node.args):
                args["_%d" % i] = ast.literal_eval(a)
            return node.func.id, args
    except (SyntaxError, ValueError):
        pass
    m = re.match(r"(\w+)\((.*)\)$", cmd, re.S)
    if m:
        return m.group(1), {"_raw": m.group(2)}
    return cmd, {}


def dedent(block):
    lines = block.split("\n")
    out = [lines[0]]
    for l in lines[1:]:
        out.append(l[6:] if l.startswith("      ") else l.strip() if not l.strip() else l.lstrip())
    return "\n".join(out).strip("\n")


def unfence(s):
    s = s.strip("\n")
    m = re.match(r"^\s*```\n(.*?)\n?```\s*$", s, re.S)
    return m.group(1) if m else s.strip()


def parse_attempt(text):
    body = text.split("<summary><strong>Steps</strong></summary>", 1)[1].split("</details>", 1)[0]
    starts = list(STEP.finditer(body))
    raw = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        raw.append(dedent(body[m.end():end]))
    turns = []  # (result_of_previous, thought, command_or_None, question_or_None)
    for r in raw:
        prev = None
        rest = r
        m = re.match(r"^`(.*?)` returned:", r, re.S)
        if m:
            rest = r[m.end():]
        paras = rest.split("\n\n")
        cmd = q = None
        if paras and paras[-1].startswith("Next Command: "):
            cmd = paras[-1][len("Next Command: "):]
            paras = paras[:-1]
            thought = paras[-1] if paras else ""
            paras = paras[:-1]
        elif m is None and len(paras) >= 2:
            thought, q = "\n\n".join(paras[:-1]), paras[-1]
            paras = []
        else:
            thought = paras[-1] if paras else ""
            paras = paras[:-1]
        if m:
            prev = unfence("\n\n".join(paras))
        turns.append((m is not None, prev, thought.strip(), cmd, q))
    steps = []
    for i, (has_prev, prev, thought, cmd, q) in enumerate(turns):
        if has_prev and steps and steps[-1]["toolCalls"]:
            c = steps[-1]["toolCalls"][0]
            c["result"] = prev
            fm = re.match(r"^Action failed: '(.*)'$", prev or "", re.S)
            if fm:
                c["error"] = fm.group(1)
        if cmd is not None:
            name, args = call_of(cmd)
            steps.append({"text": thought, "toolCalls": [{"name": name, "args": args}]})
        elif q is not None:
            steps.append({"text": thought, "toolCalls": [{"name": "ask_user", "args": {"question": q}}]})
        elif i == len(turns) - 1 and steps and steps[-1]["toolCalls"] and steps[-1]["toolCalls"][0]["name"] == "finish":
            continue
        else:
            steps.append({"text": thought, "toolCalls": []})
    return steps


def find_attempt(doc, task, attempt):
    i = doc.index("### %s " % task)
    j = doc.find("\n### ", i + 4)
    sec = doc[i:j if j >= 0 else len(doc)]
    m = re.search(r"^%d\. \*\*" % attempt, sec, re.M)
    if not m:
        sys.exit("attempt %d of %s not found" % (attempt, task))
    n = re.search(r"^\d+\. \*\*", sec[m.end():], re.M)
    return sec[m.start(): m.end() + n.start() if n else len(sec)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--task", required=True)
    ap.add_argument("--attempt", type=int, required=True)
    a = ap.parse_args()
    doc = open(a.report, encoding="utf-8").read()
    for s in parse_attempt(find_attempt(doc, a.task, a.attempt)):
        print(json.dumps(s, ensure_ascii=False))


if __name__ == "__main__":
    main()
