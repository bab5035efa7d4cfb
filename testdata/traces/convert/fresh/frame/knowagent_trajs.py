#!/usr/bin/env python3
"""Convert one ALFWorld episode of KnowAgent's released Llama-2-13b trajectories into loopguard steps.

Source: zjunlp/KnowAgent (Apache-2.0), Self-Learning/trajs/datas/KnowAgentALFWorld_llama-2-13b_D0.jsonl
(and _D1.jsonl): one JSON object per ALFWorld training game (510 games), {"name", "result", "traj"},
written by Path_Generation/alfworld_run/run_alfworld.py. D0 is the first self-learning round
(Llama-2-13b-chat prompted with KnowAgent's few-shot ReAct-style examples and action knowledge),
D1 the second round (the model after one round of fine-tuning on filtered D0 trajectories).

Rerun (one episode, selected by its 0-based line number; the game name is checked when given):
  git --git-dir=/work/.mirror/zjunlp+KnowAgent/repo show \
      82bc535f1ef2426ec883a548cb38961f9d1720ee:Self-Learning/trajs/datas/KnowAgentALFWorld_llama-2-13b_D0.jsonl \
    | python3 testdata/traces/convert/alfworld/knowagent_trajs.py LINE [GAME_NAME] > out.jsonl

The harness makes one model call per "> ..." line of `traj` (at most 50 calls; it also stops when
the prompt passes 4000 tokens), so one step per line:
- "> Think: ..." lines (the harness records no observation for them) become a step with the
  thought as `text` and no tool call;
- "> ActionPath: ..." lines (KnowAgent's running summary of the actions taken so far, also
  without observation) become a step with the whole line as `text`, no tool call and
  meta.kind = "actionPath";
- every other line is an environment action: one tool call whose `result` is the observation
  printed under it. Tool name = the ALFWorld verb ("go to", "open", "close", "take", "put",
  "clean", "heat", "cool", "use", "examine", "look", "inventory"); args are parsed from the
  verb's grammar ({"target"}, {"object", "source"}, {"object", "target"}, {"object", "with"}).
  A command outside that grammar (e.g. "find a spatula") keeps its first word as the name and
  args {"command": text}. ALFWorld answers a command it cannot carry out with "Nothing happens.";
  the harness marks nothing as a failure, so neither does the converter (no `error`).
The game's opening observation (room and task) is the first step's `input`.
"""
import json
import re
import sys

GRAMMAR = [
    ("go to", re.compile(r"^go to (?P<target>.+)$")),
    ("take", re.compile(r"^take (?P<object>.+?) from (?P<source>.+)$")),
    ("put", re.compile(r"^put (?P<object>.+?) (?:in/on|in|on) (?P<target>.+)$")),
    ("clean", re.compile(r"^clean (?P<object>.+?) with (?P<with>.+)$")),
    ("heat", re.compile(r"^heat (?P<object>.+?) with (?P<with>.+)$")),
    ("cool", re.compile(r"^cool (?P<object>.+?) with (?P<with>.+)$")),
    ("open", re.compile(r"^open (?P<target>.+)$")),
    ("close", re.compile(r"^close (?P<target>.+)$")),
    ("use", re.compile(r"^use (?P<target>.+)$")),
    ("examine", re.compile(r"^examine (?P<target>.+)$")),
    ("look", re.compile(r"^look$")),
    ("inventory", re.compile(r"^inventory$")),
]


def parse_traj(traj):
    """Split `traj` into the opening observation and [(line, observation or None)]."""
    lines = traj.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    i = 0
    opening = []
    while i < len(lines) and not lines[i].startswith("> "):
        opening.append(lines[i])
        i += 1
    rounds = []
    while i < len(lines):
        act = lines[i][2:]
        i += 1
        obs = []
        while i < len(lines) and not lines[i].startswith("> "):
            obs.append(lines[i])
            i += 1
        rounds.append((act, "\n".join(obs) if obs else None))
    return "\n".join(opening), rounds


def tool_call(action, obs):
    for name, rx in GRAMMAR:
        m = rx.match(action)
        if m:
            return {"name": name, "args": m.groupdict(), "result": obs}
    words = action.split()
    return {"name": words[0] if words else "(empty)", "args": {"command": action}, "result": obs}


def convert(row):
    opening, rounds = parse_traj(row["traj"])
    out = []
    for k, (act, obs) in enumerate(rounds):
        if act.startswith("Think:"):
            if obs is not None:
                raise SystemExit("unexpected observation after a Think line")
            step = {"text": act[len("Think:"):].strip(), "toolCalls": []}
        elif act.startswith("ActionPath:"):
            if obs is not None:
                raise SystemExit("unexpected observation after an ActionPath line")
            step = {"text": act, "toolCalls": [], "meta": {"kind": "actionPath"}}
        else:
            # (run_alfworld.py records no observation for its first call, Act 0; in the released
            # files that call is always a Think line, so `obs` is None only for Think/ActionPath.)
            step = {"text": "", "toolCalls": [tool_call(act, obs if obs is not None else "")]}
        if k == 0:
            step = dict(input=opening, **step)
        out.append(step)
    return out


def main():
    line = int(sys.argv[1])
    want = sys.argv[2] if len(sys.argv) > 2 else None
    rows = sys.stdin.read().split("\n")
    row = json.loads(rows[line])
    if want and row["name"] != want:
        sys.exit("line %d is %s, not %s" % (line, row["name"], want))
    for step in convert(row):
        sys.stdout.write(json.dumps(step, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
