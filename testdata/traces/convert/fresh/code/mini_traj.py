#!/usr/bin/env python3
"""Convert a mini-swe-agent trajectory (*.traj.json, trajectory_format "mini-swe-agent-1":
{"info", "messages": [{role, content}]}) to loopguard steps.

Rerun (bare git snapshot of gruckion/mini-swe-agent; the path is in the manifest):
  git --git-dir=/work/.mirror/gruckion+mini-swe-agent/repo show \
      d12a71affd95403b036b2bdbd827349b77bfffb9:swebench_results/20251118_gemini-3-pro-74pct/trajs/ID/ID.traj.json \
    | python3 testdata/traces/convert/coding2/mini_traj.py > testdata/traces/mini-gemini3pro-ID.jsonl

One step per assistant message. mini-swe-agent runs exactly one ```bash block per response
(action_regex r"```bash\\s*\\n(.*?)\\n```"); like the runs already in the corpus:
- text: the response without its bash block(s), "THOUGHT:" cut;
- one block -> call named by the command's first word, args {"command"}; result = the next user
  message (the harness's "<returncode>N</returncode><output>...</output>" rendering); a
  returncode other than 0 -> error "exit code N"; a timeout message -> error "timeout";
- zero or several blocks: the harness runs nothing and answers with its format error ("Please
  always provide EXACTLY ONE action in triple backticks, found 2 actions."); the step has no
  call, and that answer goes to meta.formatError (as set B does for OpenHands);
- the submission step (COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT) has no observation message: its
  result is info.submission.
Results over 16 KB keep their first 8 KB and last 4 KB.
"""
import json
import re
import sys

ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
LIMIT = 16 * 1024


def clip(text):
    if text is None:
        return None
    raw = text.encode("utf-8")
    if len(raw) <= LIMIT:
        return text
    head = raw[:8192].decode("utf-8", "ignore")
    tail = raw[-4096:].decode("utf-8", "ignore")
    return head + "...[%d bytes cut]..." % (len(raw) - len(head.encode()) - len(tail.encode())) + tail


def content(m):
    c = m.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def main():
    d = json.load(sys.stdin)
    msgs = d["messages"]
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        c = content(m)
        actions = ACTION.findall(c)
        text = ACTION.sub("", c).strip()
        if text.startswith("THOUGHT:"):
            text = text[len("THOUGHT:"):].strip()
        nxt = content(msgs[i + 1]) if i + 1 < len(msgs) and msgs[i + 1]["role"] == "user" else None
        step = {"text": text, "toolCalls": []}
        if len(actions) == 1:
            cmd = actions[0].strip()
            words = cmd.split()
            res = nxt if nxt is not None else (d.get("info") or {}).get("submission")
            call = {"name": words[0] if words else "", "args": {"command": cmd}, "result": clip(res)}
            rc = re.match(r"\s*<returncode>(-?\d+)</returncode>", nxt or "")
            if rc and rc.group(1) != "0":
                call["error"] = "exit code " + rc.group(1)
            elif nxt is not None and nxt.startswith("The last command <command>") and "timed out" in nxt[:2000]:
                call["error"] = "timeout"
            step["toolCalls"].append(call)
        else:
            step["meta"] = {"formatError": nxt}
        print(json.dumps(step, ensure_ascii=False))
    info = d.get("info") or {}
    print(json.dumps({"exit_status": info.get("exit_status"), "model_stats": info.get("model_stats")}), file=sys.stderr)


if __name__ == "__main__":
    main()
