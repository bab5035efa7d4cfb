#!/usr/bin/env python3
"""Writes labels.json from the hand-written labels below (step counts are read from runs/)."""
import json, os
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEM = dict(harness="mini-swe-agent", model="gemini-3-pro-preview (mini-swe-agent 1.15.0)",
           source_repo="gruckion/mini-swe-agent", source_commit="d12a71affd95403b036b2bdbd827349b77bfffb9", license="MIT")
DS = dict(harness="mini-swe-agent", model="deepseek-chat (mini-swe-agent 2.2.7, tool calls)",
          source_repo="SWE-agent/mini-swe-agent", source_commit="ec0e8e849fea5b1619deb1753007201000904672", license="MIT")
AI = dict(harness="aider", model="claude-3-5-sonnet-20240620 (aider diff edit format)",
          source_repo="Aider-AI/aider", source_commit="5dc9490bb35f9729ef2c95d00a19ccd30c26339c", license="Apache-2.0",
          source_path="tests/fixtures/chat-history.md")
GP = "swebench_results/20251118_gemini-3-pro-74pct/trajs/{0}/{0}.traj.json"
DP = "output/{0}/{1}/{1}.traj.json"
L = []
def g(file, task, label, why, loop_start=None, picked="random"):
    L.append(dict(GEM, file=file, task=task, source_path=GP.format(task), label=label, loop_start=loop_start, why=why, picked=picked))
def d(file, dir_, task, label, why, loop_start=None, picked="random"):
    L.append(dict(DS, file=file, task=task, source_path=DP.format(dir_, task), label=label, loop_start=loop_start, why=why, picked=picked))
def a(file, line, label, why, loop_start=None, picked="random"):
    x = dict(AI, file=file, task=None, label=label, loop_start=loop_start, why=why, picked=picked)
    x["source_path"] = AI["source_path"] + " (session header at line %d)" % line
    L.append(x)

g("mini-gemini3pro-sympy-17630.jsonl", "sympy__sympy-17630", "healthy",
  "Reproduces the BlockMatrix bug, probes it with five different debug scripts, rewrites _blockmul, and re-runs reproduce_issue.py (line 26) and bin/test (lines 38, 41) only after edits; each re-run gives a new result.")
g("mini-gemini3pro-django-11999.jsonl", "django__django-11999", "healthy",
  "Fixes get_FOO_display, re-runs both repro scripts after the sed edit (lines 13-14), then runs model_fields tests: fail after adding a test (line 27), import fixed (29), pass (30).")
g("mini-gemini3pro-django-10554.jsonl", "django__django-10554", "healthy",
  "Rewrites the reproduction script four times with different probes (lines 3-25), tries query.clone() (28), reverts (31), re-applies it (38) after two more probes, then runs the query tests; the two format-error turns (26, 36) are isolated.")
g("mini-gemini3pro-sympy-19346.jsonl", "sympy__sympy-19346", "healthy",
  "bin/test test_repr.py fails on lines 23, 25 and 27, but in between the agent stashes and restores its change to check whether the failure pre-exists; then writes its own test, fixes it and it passes (34).")
g("mini-gemini3pro-django-13023.jsonl", "django__django-13023", "healthy",
  "One edit, a failing re-run (line 10), a look at the code, a broader edge-case script, a second edit (26) and re-runs of the same script and test suite that now pass.")
g("mini-gemini3pro-django-14672.jsonl", "django__django-14672", "healthy",
  "Three failing reproduction attempts, each with a different settings setup (lines 3-7), then a separate app that reproduces the TypeError (11); the make_hashable edit (18) makes the same script pass (20).")
g("mini-gemini3pro-django-14122.jsonl", "django__django-14122", "healthy",
  "Edits pre_sql_setup, finds the test suite failing, removes that edit (27) and puts the fix in get_group_by instead (32); reproduce_issue.py and aggregation_regress are re-run after each change with new output.")
g("mini-gemini3pro-django-11400.jsonl", "django__django-11400", "healthy",
  "reproduce_issue.py fails on lines 6, 8 and 10, each time after a different setup fix (app package, run_syncdb, models file), then works; the filter edits are followed by re-runs and a new ChangeList check.")
g("mini-gemini3pro-seaborn-3069.jsonl", "mwaskom__seaborn-3069", "unclear",
  "Two bursts of three format-error turns in a row (lines 28-30 and 38-40): the model keeps quoting bash blocks inside its thoughts and gets 'found N actions' each time, apologising in new words but changing nothing that matters. Both times it breaks out by itself (31, 41), and the rest of the run makes progress.",
  loop_start=28)
g("mini-gemini3pro-django-15503.jsonl", "django__django-15503", "healthy",
  "Gets a working reproduction on the third setup (line 8), tests SQLite JSON paths directly, patches HasKeyLookup with a script (20), and the same repro now passes (21); then edge cases.")
g("mini-gemini3pro-django-12050.jsonl", "django__django-12050", "healthy",
  "type(value)(...) fix (line 10) passes the repro, a namedtuple probe shows it breaks (19), the fix is refined (20), and both scripts and three test modules are run.")
g("mini-gemini3pro-sympy-14531.jsonl", "sympy__sympy-14531", "healthy",
  "Fixes several StrPrinter methods one after another; lines 27-48 are a sweep over different _print_* methods (grep, then view), each new; the tests are re-run after the expected strings are updated (55, 60).")

d("mini-dschat-rerun-pydicom-1413.jsonl", "deepseek_chat_dev_rerun", "pydicom__pydicom-1413", "healthy",
  "104 steps of varied investigation and a new test script for each question (OL/OB/list/backslash); the edit is backed up, restored (74) and redone differently, and each re-run of a test script follows a change.")
d("mini-dschat-dev-pydicom-901.jsonl", "deepseek_chat_dev", "pydicom__pydicom-901", "healthy",
  "Explores pydicom's logging set-up with distinct greps and scripts, rewrites config.py three times (36, 38, 54) with different content and checks each with a new test script.")
d("mini-dschat-rerun-sqlfluff-1763.jsonl", "deepseek_chat_dev_rerun", "sqlfluff__sqlfluff-1763", "healthy",
  "Traces the write path, writes a different reproduction script each time (30-51), makes a one-line fix (59), then runs many different verification scripts and test modules; no command repeats with the same output.")
d("mini-dschat-django-12286.jsonl", "deepseek_chat_test_1-100", "django__django-12286", "healthy",
  "Works on the translation.E004 check with a series of distinct logic scripts, edits the check and refines it (73), re-creating patch.txt after the change (75-76).")
d("mini-dschat-django-11815.jsonl", "deepseek_chat_test_1-100", "django__django-11815", "healthy",
  "Installs missing deps one at a time, patches EnumSerializer, fixes a duplicate import, updates test expectations twice with different scripts (37, 39), and checks each with a new script.")
d("mini-dschat-dev-sqlfluff-1763.jsonl", "deepseek_chat_dev", "sqlfluff__sqlfluff-1763", "healthy",
  "Several malformed or rejected patch files (lines 42, 60, 62, 76), each a different patch, then an edit via a Python script and new tests; cat file_helpers.py recurs (28, 38, 84) far apart.")
d("mini-dschat-django-15695.jsonl", "deepseek_chat_test_1-100", "django__django-15695", "healthy",
  "Patches RenameIndex.database_backwards, restores from backup and re-patches with different scripts several times (27-39, 70-84); the repeated git diff / cat patch.txt pairs (65-66, 80-81, 85-86) each follow an edit.")
d("mini-dschat-django-13033.jsonl", "deepseek_chat_test_1-100", "django__django-13033", "healthy",
  "reproduce_issue.py fails four times (7-13), each after a different pip install or rewrite; then a long, varied trace of find_ordering_name with new debug scripts, two rejected patch files and a working fix (80-84).")
d("mini-dschat-rerun-pydicom-1694.jsonl", "deepseek_chat_dev_rerun", "pydicom__pydicom-1694", "healthy",
  "Reads the to_json_dict path, reproduces in three different scripts, applies one patch (33) and verifies with new edge-case and pytest runs.")
d("mini-dschat-rerun-marshmallow-1343.jsonl", "deepseek_chat_dev_rerun", "marshmallow-code__marshmallow-1343", "unclear",
  "Lines 90-107 are four rounds of git checkout -> sed deletion -> view: line 97 repeats line 91's edit (sed -i '895,897d') with the same broken result, and every checkout also throws away the agent's earlier fix, which it only notices at line 106. It breaks out with a full patch file (108) and passes the tests.",
  loop_start=90)
d("mini-dschat-rerun-pvlib-1854.jsonl", "deepseek_chat_dev_rerun", "pvlib__pvlib-python-1854", "healthy",
  "python reproduce_issue.py runs 10 times, each after a change: four pip installs (7-13), two np.Inf fixes (16, 19), fix scripts and a syntax fix (83); the output moves from ImportError to SUCCESS.",
  picked="hard-negative")
d("mini-dschat-django-12470.jsonl", "deepseek_chat_test_1-100", "django__django-12470", "healthy",
  "131 steps. reproduce_issue.py is re-run 8 times, after a pip install (8), a rewrite of the script (9-13) or an edit of compiler.py (84, 94, 128); the compiler.py edit is restored from backup and re-applied (116-126) on purpose to build the patch.",
  picked="hard-negative")

a("aider-claude35-20240810-1021.jsonl", 32199, "healthy",
  "The user asks about the same leaderboard width issue again after /undo and /clear (lines 1, 2, 5, 7); each reply proposes a different edit. The failing SEARCH blocks on lines 2-3 are followed by the model seeing that the change is already there (4).")
a("aider-claude35-20240809-1600.jsonl", 21304, "healthy",
  "Four user requests (a /read command, fences, a read-only content function asked again after the user interrupted the reply, read-only messages), each answered with a different edit that applies.")
a("aider-claude35-20240811-0954.jsonl", 42706, "healthy",
  "Different requests (--chat-mode alias, /code command, docs, /help, factorial); lines 4-5 answer the same /help question, asked twice by the user, with the same pointer. That is two user-driven answers, not a loop.")

for x in L:
    with open(os.path.join(ROOT, "runs", x["file"])) as f:
        x["steps"] = sum(1 for l in f if l.strip())
order = ["file", "harness", "model", "source_repo", "source_path", "source_commit", "license", "task", "steps", "label", "loop_start", "why", "picked"]
out = [{k: x[k] for k in order} for x in L]
assert len({x["file"] for x in out}) == len(out)
assert set(x["file"] for x in out) == set(os.listdir(os.path.join(ROOT, "runs"))), set(os.listdir(os.path.join(ROOT, "runs"))) ^ set(x["file"] for x in out)
json.dump(out, open(os.path.join(ROOT, "labels.json"), "w"), indent=1, ensure_ascii=False)
from collections import Counter
print(len(out), Counter(x["label"] for x in out), Counter(x["picked"] for x in out))
