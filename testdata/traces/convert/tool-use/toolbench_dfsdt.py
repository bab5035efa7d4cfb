"""Convert a ToolBench DFSDT answer file (data_example/answer/G*_answer/*_DFS_woFilter_w2.json)
into loopguard steps, in the order the model produced them.

Rerun (the mirror is a bare repo):
  git -C /work/.mirror/OpenBMB+ToolBench/repo show COMMIT:data_example/answer/G2_answer/10_ChatGPT_DFS_woFilter_w2.json \
    | python3 testdata/traces/convert/tool-use/toolbench_dfsdt.py > testdata/traces/toolbench-dfsdt-G2-10.jsonl

Format: "tree" is the DFSDT search tree. Node types: "Thought" (the assistant's
message text), "Action" (function name), "Action Input" (arguments, with
"observation" and "observation_code"). DFS expands nodes depth-first, so a
pre-order walk gives the model calls in time order; when the search backtracks
the next call continues from an earlier node (meta.backtrack = true: the
previous step is not an ancestor of this one; meta.depth is the tree depth). One step per model call: an Action (with the Thought that
is its parent, if any, as text) or a Thought with no Action child (a text-only
call). answer_generation.query_count can be a little larger than the number
of steps: the tree does not keep every model call (meta.queryCount on step 1).
The user's query is the "input" of step 1.
observation_code (rapidapi.py): 0 ok, 3 final answer, 4 model chose
give_up_and_restart; 1 no such function, 2 bad input, 5-12 API/transport
errors (timeout, 404, not subscribed, unauthorized, rate limits, "Message
error", request error). Codes other than 0, 3 and 4 get "error":
"observation_code N"; the observation is always kept in "result".
"""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import clip, parse_args, dump  # noqa: E402


def convert(doc):
    steps = []
    last = [None]  # node of the previous step
    path = []  # ids of the nodes from the root to the current one

    def emit(step, node):
        meta = step.setdefault("meta", {})
        meta["depth"] = node["depth"]
        if last[0] is not None and id(last[0]) not in path:
            meta["backtrack"] = True
        last[0] = node
        steps.append(step)

    def walk(node, parent):
        path.append(id(node))
        try:
            visit(node, parent)
        finally:
            path.pop()

    def visit(node, parent):
        t = node["node_type"]
        kids = node.get("children", [])
        if t == "Thought":
            if not any(k["node_type"] == "Action" for k in kids):
                emit({"text": node.get("description") or "", "toolCalls": []}, node)
        elif t == "Action":
            text = parent.get("description") or "" if parent and parent["node_type"] == "Thought" else ""
            name = node.get("description") or ""
            for k in kids:
                if k["node_type"] != "Action Input":
                    continue
                args, bad = parse_args(k.get("description"))
                call = {"name": name, "args": args, "result": clip(k.get("observation"))}
                code = k.get("observation_code")
                if code not in (None, 0, 3, 4):
                    call["error"] = "observation_code %d" % code
                step = {"text": text, "toolCalls": [call]}
                if bad:
                    step["meta"] = {"formatError": True}
                if code is not None:
                    step.setdefault("meta", {})["observationCode"] = code
                path.append(id(k))
                emit(step, k)
                path.pop()
        for k in kids:
            if t == "Action" and k["node_type"] == "Action Input":
                path.append(id(k))
                for kk in k.get("children", []):
                    walk(kk, k)
                path.pop()
            else:
                walk(k, node)

    root = doc["tree"]["tree"]
    for k in root.get("children", []):
        walk(k, root)
    return steps


def main():
    doc = json.load(sys.stdin)
    steps = convert(doc)
    if steps:
        steps[0]["input"] = doc["answer_generation"].get("query")
        steps[0].setdefault("meta", {})["queryCount"] = doc["answer_generation"].get("query_count")
    dump(steps, sys.stdout)


if __name__ == "__main__":
    main()
