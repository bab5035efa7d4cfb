#!/usr/bin/env python3
"""Convert a ChatDev 1.0 WareHouse run log (WareHouse/<project>/<...>.log) to loopguard steps.

Rerun:
  git --git-dir=/work/.mirror/OpenBMB+ChatDev/repo show \
      chatdev1.0:WareHouse/timer_THUNLP_20230823091709/20230823091709.log \
    | python3 testdata/traces/convert/coding/chatdev_log.py > testdata/traces/chatdev-timer.jsonl
(the chatdev1.0 branch of the snapshot; commit in manifest.json)

The log is a sequence of entries "[YYYY-DD-MM hh:mm:ss INFO] header" + body. One step = one agent
utterance, header "<Speaker>: **<A><-><B> on : <Phase>, turn N**" (both sides of a role-play turn
are model outputs); text = the body without the bracketed role prompt that ChatDev prints first;
meta = {speaker, phase, turn}. A message that ChatDev logs twice in a row (same phase and turn,
same text, under the other role's name) is kept once (meta.alsoLoggedAs). ChatDev parses code files out of an utterance and writes them
("[Update Codes]" diffs, "[Rewrite Codes]"): that is the step's one tool call, name
"update_codes", args {"command": the fenced code blocks of the utterance with their file-name
lines}, result = the harness's update entries. ChatDev runs the software itself before each test
phase; its "[Test Reports]" text becomes the "input" of the next utterance. ChatDev flags no
failure structurally, so no "error" is set. The logs were written on Windows: CRLF line ends are
read as LF. Per-call token counts are logged but cannot be
matched one-to-one to utterances (retries, self-improvement calls), so usage is left out.
"""
import json
import re
import sys

HDR = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO\] (.*)$")
UTT = re.compile(r"^(?P<speaker>[^:*\[]+): \*\*(?P<a>.+?)<->(?P<b>.+?) on : (?P<phase>\w+), turn (?P<turn>\d+)\*\*\s*$")
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


def strip_role_prompt(body):
    b = body.strip("\n")
    if b.startswith("[ChatDev is a software company"):
        end = b.find("]\n\n")
        if end != -1:
            b = b[end + 3:]
    return b.strip("\n")


def code_blocks(text):
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            name = lines[i - 1].strip() if i > 0 else ""
            out.append((name + "\n" if name else "") + "\n".join(lines[i:j + 1]))
            i = j + 1
            continue
        i += 1
    return "\n\n".join(out)


def main():
    entries = []
    for line in sys.stdin.read().replace("\r\n", "\n").split("\n"):
        m = HDR.match(line)
        if m:
            entries.append([m.group(1), []])
        elif entries:
            entries[-1][1].append(line)
    steps = []
    pending = []
    for head, body in entries:
        text = "\n".join(body)
        m = UTT.match(head)
        if m:
            txt = strip_role_prompt(text)
            prev = steps[-1] if steps else None
            if (prev is not None and not pending and prev["text"] == txt and prev.get("meta", {}).get("phase") == m.group("phase")
                    and prev.get("meta", {}).get("turn") == int(m.group("turn"))):
                # ChatDev logs some messages a second time under the other role's name (same phase,
                # same turn, same text): one model output, kept once
                prev["meta"]["alsoLoggedAs"] = m.group("speaker").strip()
                continue
            st = {"text": txt, "toolCalls": []}
            if pending:
                st["input"] = "\n\n".join(pending)
                pending = []
            st["meta"] = {"speaker": m.group("speaker").strip(), "phase": m.group("phase"), "turn": int(m.group("turn"))}
            steps.append(st)
        elif head.startswith("Prompt Engineer:"):
            st = {"text": (head[len("Prompt Engineer:"):].strip() + "\n" + text).strip("\n"), "toolCalls": [],
                  "meta": {"speaker": "Prompt Engineer", "phase": "TaskPromptSelfImprovement"}}
            steps.append(st)
        elif head.startswith("**[Test Reports]**"):
            pending.append("[Test Reports]\n" + text.strip("\n"))
        elif head.startswith("**[Update Codes]**") or head.startswith("**[Rewrite Codes]**"):
            if not steps:
                continue
            last = steps[-1]
            piece = head.strip("*[]: ") + "\n" + text.strip("\n")
            if last["toolCalls"] and last["toolCalls"][0]["name"] == "update_codes":
                call = last["toolCalls"][0]
                call["result"] = cut(call["_raw"] + "\n\n" + piece)
                call["_raw"] += "\n\n" + piece
            else:
                last["toolCalls"].append({"name": "update_codes", "args": {"command": code_blocks(last["text"])},
                                          "result": cut(piece), "error": None, "_raw": piece})
    for st in steps:
        for c in st["toolCalls"]:
            c.pop("_raw", None)
        print(json.dumps(st, ensure_ascii=False))


if __name__ == "__main__":
    main()
