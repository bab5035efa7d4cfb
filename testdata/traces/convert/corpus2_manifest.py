#!/usr/bin/env python3
"""Write testdata/traces/convert/corpus2-manifest.json: the entries of the runs added by the
corpus2 batch (issue 22), in MANIFEST.json's schema, for the coordinator to merge.

Labels, `why` and `loop_start` were written here by reading each converted run before any
detector ran on it; `steps` and `stats` are counted from the files.
"""
import manifest_batch

MINT = dict(source_repo="xingyaoww/mint-bench", source_commit="3f7f12c10bf763be1e6dbdeb42feb57624121f61",
            license="Apache-2.0", harness="mint", converter="convert/shortcap/mint_results.py",
            handwritten=False)


def mint(file, path, task_id, model, label, why, loop_start=None, pattern="none", notes=""):
    e = dict(file=file + ".jsonl", source_path="%s (task_id %s)" % (path, task_id), model=model,
             label=label, why=why, loop_start=loop_start, pattern=pattern, notes=notes, **MINT)
    return e


D = "data/outputs"
RUNS = [
    mint("mint-gpt35-humaneval-21", D + "/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl", 21,
         "gpt-3.5-turbo-0613", "loops",
         "The same code is executed four times (steps 1-4) with the same AssertionError each time while the thought says it will fix the case swap; only the cell counter in the traceback changes; then the cap.",
         1, "identical calls", "MINT, 5-turn cap, no feedback. Results differ only in IPython's 'Cell In[N]' counter."),
    mint("mint-codeactmistral7b-math-33", D + "/CodeActAgent-Mistral-7b-v0.1/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl", 33,
         "CodeActAgent-Mistral-7b-v0.1", "loops",
         "The same unmatched ')' is sent four times: step 1 reports it at line 6, steps 2-4 run an identical shorter cell and report it at line 2, while each thought says it will fix the parentheses; then the cap.",
         1, "failure loop", "Error line number moves (line 6, then 2, 2, 2)."),
    mint("mint-codellama34b-fbgpt4-theoremqa-20", D + "/CodeLlama-34b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl", 20,
         "CodeLlama-34b-Instruct-hf (feedback by gpt-4-0613)", "loops",
         "Steps 2-4 send an unindented recursive function three times, changing only its last line, and get the same IndentationError at line 2 each time although the expert feedback (input) says so; step 5 sends it again at the cap.",
         2, "failure loop", "MINT with GPT-4 textual feedback as input on each step."),
    mint("mint-gpt35-mbpp-6", D + "/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl", 6,
         "gpt-3.5-turbo-0613", "loops",
         "A 4-step a-b-a-b ping-pong: the same function with an assert (fails: got 5) and the same function with a print (prints 5) alternate twice without any change to the formula; then a wrong answer at the cap.",
         1, "cycle", ""),
    mint("mint-gpt35-mbpp-47", D + "/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl", 47,
         "gpt-3.5-turbo-0613", "loops",
         "Execute X (passes), propose X (wrong, the function name differs from the task's), then the identical execute and the identical proposal again: an a-b-a-b ping-pong that ends on the proposal cap.",
         1, "cycle", "4 steps; ends with max_propose_steps."),
    mint("mint-codeactmistral7b-hotpotqa-6", D + "/CodeActAgent-Mistral-7b-v0.1/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl", 6,
         "CodeActAgent-Mistral-7b-v0.1", "loops",
         "Four searches that only append words to 'Roald Dahl' return the identical Roald Dahl summary four times; steps 3 and 4 plan the same next search in the same words; then an I-cannot-tell answer.",
         1, "same result from slightly different args", ""),
    mint("mint-codellama34b-fbgpt4-mmlu-50", D + "/CodeLlama-34b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl", 50,
         "CodeLlama-34b-Instruct-hf (feedback by gpt-4-0613)", "loops",
         "Four searches ('Jupiter', 'Jupiter internal heat', 'Jupiter heat source', 'Jupiter heat generation') return the identical Jupiter summary; the expert says each time that the search brought nothing new, and a fifth variant is sent at the cap.",
         1, "same result from slightly different args", "Feedback inputs change every step."),
    mint("mint-gpt35-alfworld-coolpan", D + "/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl",
         "pick_cool_then_place_in_recep-Pan-None-CounterTop-10/trial_T20190908_114622_738670",
         "gpt-3.5-turbo-0613", "loops",
         "After a search, put(pan 2, countertop 1) is sent twice and then to cabinet 1 without ever taking the pan; 'Nothing happens.' three times, then a made-up answer at the cap.",
         2, "failure loop", "ALFWorld via MINT's Python tools."),
    mint("mint-gpt4-mbpp-11", D + "/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl", 11,
         "gpt-4-0613", "healthy",
         "Three different formulas fail the same assert with different numbers (got 145, 146, 155), the fourth passes and is proposed correctly.",
         None, "retries that succeed", "Hard negative: the same AssertionError text up to the number, three times in a row, in a run that makes progress."),
    mint("mint-gpt4-humaneval-42", D + "/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl", 42,
         "gpt-4-0613", "healthy",
         "Writes the function, tests the task's example, adds its own edge-case asserts (fail), rewrites the function, proposes it (success); steps 3-5 carry the same stray text \"Assistant:'\" while each call is new.",
         None, "repeated text on progressing steps", "Hard negative for repeated text: the same junk text on three steps with new calls and results."),
    mint("mint-gpt4-hotpotqa-7", D + "/gpt-4-0613/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl", 7,
         "gpt-4-0613", "healthy",
         "Four different Wikipedia searches, each with a different result, narrow down to the London International Documentary Festival; the answer is correct.",
         None, "sweep", ""),
    mint("mint-gpt4-alfworld-twopeppershaker", D + "/gpt-4-0613/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl",
         "pick_two_obj_and_place-PepperShaker-None-Drawer-10/trial_T20190908_010306_215435",
         "gpt-4-0613", "healthy",
         "Finds the first pepper shaker, opens the closed drawer after 'Nothing happens', puts it in, finds and moves the second; each step acts on the last observation.",
         None, "none", "Succeeds (the result of the last step is not recorded at the cap)."),
]

MINI = dict(source_repo="gruckion/mini-swe-agent", source_commit="d12a71affd95403b036b2bdbd827349b77bfffb9",
            license="MIT", harness="mini-swe-agent", converter="convert/coding2/mini_traj.py",
            handwritten=False, model="gemini-3-pro-preview (mini-swe-agent 1.15.0)")


def mini(iid, label, why, loop_start=None, pattern="none", notes=""):
    return dict(file="mini-gemini3pro-%s.jsonl" % iid.split("__")[1],
                source_path="swebench_results/20251118_gemini-3-pro-74pct/trajs/%s/%s.traj.json" % (iid, iid),
                label=label, why=why, loop_start=loop_start, pattern=pattern, notes=notes, **MINI)


RUNS += [
    mini("django__django-11138", "healthy",
         "115 steps that explore, reproduce, patch three backends and run tests; 15 times the harness rejects a reply with two or more bash blocks and the model apologises (13 times in the words 'I apologize. I will combine the commands.') with a new command that brings a new result; 'Run reproduction script.' and its variants recur on steps whose outputs differ.",
         None, "narration; recurring format errors recovered at once",
         "Hard negative: the same short apology and the same short 'Run ...' sentences on many steps, each followed by a call with a new outcome. Format-error turns have no call (meta.formatError)."),
    mini("django__django-15280", "healthy",
         "96 steps: reproduce, add and move debug prints, fix two descriptors, run three test modules; 'Run reproduction script.' is said 10 times, each after an edit, and python reproduce_issue.py prints something new each time.",
         None, "narration; re-running after edits",
         "Hard negative: the issue's narration kind (identical short sentence and identical command on steps whose results change)."),
    mini("django__django-13297", "healthy",
         "95 steps of debugging a SimpleLazyObject lookup: 'Run reproduction script.' 12 times and 'Run it.' 4 times after edits whose outputs change, seven rejected multi-block replies each followed by a new action, then tests pass and it submits.",
         None, "narration; re-running after edits", ""),
]

RUNS += [
    mint("mint-codellama13b-fbgpt4-mmlu-2", D + "/CodeLlama-13b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl", 2,
         "CodeLlama-13b-Instruct-hf (feedback by gpt-4-0613)", "loops",
         "Five unparseable replies in a row (an <execute> block cut off before its closing tag), each answered with the same 'I don't understand your input'; steps 3-5 are the identical text and receive the identical expert feedback.",
         1, "failure loop", "Stall of unparseable replies until the cap."),
    mint("mint-lemur70b-fbgpt4-mmlu-51", D + "/lemur-70b-v1/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl", 51,
         "lemur-70b-v1 (feedback by gpt-4-0613)", "healthy",
         "Five searches with different keywords ('Jaina traditions', 'caityavasis in Jaina traditions', 'Jaina caityavasis', 'caityavasis', 'Jainism'), three of them empty, each one the next term the expert feedback suggests.",
         None, "sweep", "Hard negative: empty results from different keywords, following new input each step."),
    mint("mint-llama3-70b-humaneval-39", D + "/Meta-Llama-3-70B-Instruct/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl", 39,
         "Meta-Llama-3-70B-Instruct", "loops",
         "Four rewrites of the same digit-sum sort (generator, list, helper function, enumerate) print the identical wrong order [1, -1, 11, -11, -12] four times while each thought says the output is still not correct; then the same code is proposed.",
         1, "same result from slightly different args", "The same code comes back with extra lines and gives the same output."),
    mint("mint-gpt4-humaneval-26", D + "/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl", 26,
         "gpt-4-0613", "healthy",
         "Kadane-style attempt fails a bare AssertionError twice (two different fixes), the third reading of the task passes both tests and the solution is correct.",
         None, "retries that succeed", "Hard negative: two identical error texts in a row in a 4-step run that succeeds."),
]

AUTOGPT = dict(source_repo="Significant-Gravitas/AutoGPT", source_commit="3203842180aa6e6eba157f552490a688141f4836",
               license="MIT", harness="autogpt-agbenchmark", converter="convert/autogpt/agbenchmark_report.py",
               handwritten=False, model="AutoGPT agent (model not printed in the report)")


def autogpt(file, task, attempt, label, why, loop_start=None, pattern="none", notes=""):
    return dict(file=file + ".jsonl",
                source_path="benchmark/reports/autogpt/20240522T021420_full_run/report.md (### %s, attempt %d)" % (task, attempt),
                label=label, why=why, loop_start=loop_start, pattern=pattern,
                notes=(notes + " " if notes else "") + "Converted from the report's text as read through the code index (the repository is over the snapshot size limit); the report prints no reply to ask_user.",
                **AUTOGPT)


RUNS += [
    autogpt("autogpt-20240522-answerquestioncombinecsv-a1", "AnswerQuestionCombineCsv", 1, "loops",
            "Eleven turns in a row ask the user where the utility files are (the same question 8 times, the thought reworded), though list_folder would have shown them; no answer ever comes and nothing else is tried.",
            1, "canned reply", "Stall: the same ask_user question with no input."),
    autogpt("autogpt-20240522-answerquestioncombinecsv-a3", "AnswerQuestionCombineCsv", 3, "loops",
            "Twelve turns ask the identical question for the location of the utility data, with the identical thought on 9 of them; nothing else is tried until the attempt ends.",
            1, "canned reply", ""),
    autogpt("autogpt-20240522-revenueretrieval2-a1", "RevenueRetrieval2", 1, "healthy",
            "Two web searches fail with DuckDuckGo '202 Ratelimit' (each error carries a different vqd request token), then the agent switches to its own knowledge, runs code and writes the file.",
            None, "outage then a new approach", "Hard negative: tool outage with request ids in the error, two failures, then progress."),
    autogpt("autogpt-20240522-revenueretrieval2-a3", "RevenueRetrieval2", 3, "healthy",
            "Search rate-limited (vqd token), SEC page too long for raw content, search rate-limited again (new token), then a site-restricted search: four different approaches in four steps until the time cutoff.",
            None, "failures with ids, each followed by a new approach", "Three failures in three calls, all different calls; the attempt ends on the benchmark's time cutoff."),
]

RUNS += [
    mint("mint-opencodeinterp70b-math-16", D + "/OpenCodeInterpreter-CL-70B/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl", 16,
         "OpenCodeInterpreter-CL-70B", "loops",
         "An a-b-a-b-a ping-pong: two sympy cells that differ only in the right-hand side (2**(1/3) or x**(1/3)) alternate five times, each failing with the same TypeError on the literal '...', while each thought says it corrects the other one.",
         1, "cycle", "A short ping-pong of calls that fail identically; the fifth call is unresolved at the cap."),
    mint("mint-agentlm70b-mbpp-14", D + "/agentlm-70b-llama-2/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl", 14,
         "agentlm-70b-llama-2", "loops",
         "Two versions of count_Hexadecimal alternate a-b-a-b-a, each failing with the same 'Expected 6 but got 0', while the thoughts swap back and forth between the same two plans.",
         1, "cycle", "A short ping-pong of calls that fail identically."),
]


def main():
    out = manifest_batch.write(RUNS, "corpus2-manifest.json")


if __name__ == "__main__":
    main()
