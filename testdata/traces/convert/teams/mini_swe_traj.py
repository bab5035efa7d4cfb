#!/usr/bin/env python3
"""mini-swe-agent trajectory (.traj.json, text actions) -> loopguard steps, in the layout of the
mini-gemini3pro-* runs already in testdata/traces (which this reproduces byte for byte).

    git show COMMIT:PATH.traj.json | python3 mini_swe_traj.py > run.jsonl

One step per assistant message: the text is the THOUGHT (the message without its bash block, cut
after 4,000 characters), the call is the bash block (`name` = the command's first word, `args` =
{"command": ...}), the result the next user message (`<returncode>N</returncode>\n<output>...`, cut
after 4,000 characters), with error "exit code N" when N is not 0. A reply the harness rejects
("found N actions", or a timeout notice) runs nothing: the step has no call and the harness's
message is kept under `meta.formatError`. finishReason and usage come from the recorded response.
"""
import json
import re
import sys

BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
LIMIT = 4000  # results are cut here, as in the runs converted before


def cut(s):
    if s is None or len(s) <= LIMIT:
        return s
    return s[:LIMIT] + "...[truncated %d chars]" % (len(s) - LIMIT)


def main():
    d = json.load(sys.stdin)
    msgs = d["messages"]
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        content = m["content"]
        nxt = msgs[i + 1]["content"] if i + 1 < len(msgs) and msgs[i + 1]["role"] == "user" else None
        blocks = BLOCK.findall(content)
        text = BLOCK.sub("", content).strip()
        text = re.sub(r"^THOUGHT:\s*", "", text).strip()
        step = {"text": cut(text), "toolCalls": []}
        rc = re.match(r"<returncode>(-?\d+)</returncode>", nxt or "")
        if len(blocks) == 1 and rc:
            cmd = blocks[0].strip()
            name = cmd.split()[0] if cmd.split() else ""
            err = None if rc.group(1) == "0" else "exit code %s" % rc.group(1)
            step["toolCalls"].append({"name": name, "args": {"command": cmd}, "result": cut(nxt), "error": err})
        elif nxt is not None and "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" not in content:
            step["meta"] = {"formatError": nxt}
        elif blocks:
            cmd = blocks[0].strip()
            step["toolCalls"].append({"name": cmd.split()[0], "args": {"command": cmd}, "result": cut(nxt), "error": None})
        resp = (m.get("extra") or {}).get("response") or {}
        ch = (resp.get("choices") or [{}])[0]
        if ch.get("finish_reason"):
            step["finishReason"] = ch["finish_reason"]
        u = resp.get("usage")
        if u:
            step["usage"] = {"inputTokens": u["prompt_tokens"], "outputTokens": u["completion_tokens"]}
        print(json.dumps(step, ensure_ascii=False))


main()
