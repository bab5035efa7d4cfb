#!/usr/bin/env python3
"""Write testdata/traces/convert/corpus3-manifest.json: the entries of the MINT runs added by the
corpus3 batch (issue 22), in MANIFEST.json's schema, and merge them into MANIFEST.json.

The runs were picked on purpose for three shapes and their hard negatives: the same tool output
coming back from rephrased searches or rewritten code; a-b-a-b alternations; nearly identical
thoughts step after step. Labels, `why`, `pattern` and `loop_start` were written here by reading
each converted run before any detector ran on it; `steps` and `stats` are counted from the files.
Conventions as in corpus2_manifest.py (`convert/shortcap/build_mint.sh` has the recipes).
"""
import manifest_batch

MINT = dict(source_repo="xingyaoww/mint-bench", source_commit="3f7f12c10bf763be1e6dbdeb42feb57624121f61",
            license="Apache-2.0", harness="mint", converter="convert/shortcap/mint_results.py",
            handwritten=False)

D = "data/outputs"
FB = "F=gpt-4-0613/PHF=no_GT-textual"
CAP = "max5_p2+tool+cd"


def mint(file, model_dir, feedback, group, task_id, model, label, why, loop_start=None, pattern="none", notes=""):
    path = "%s/%s/%s/%s/%s/results.jsonl" % (D, model_dir, feedback, CAP, group)
    return dict(file=file + ".jsonl", source_path="%s (task_id %s)" % (path, task_id), model=model,
                label=label, why=why, loop_start=loop_start, pattern=pattern, notes=notes, **MINT)


FBNOTE = "MINT, 5-turn cap, GPT-4 textual feedback as the input of each next step."
NONOTE = "MINT, 5-turn cap, no feedback."

RUNS = [
    # 1. The same tool output from rephrased searches or rewritten code: runs that get nowhere.
    mint("mint-gpt4-mmlu-47", "gpt-4-0613", "F=None", "reasoning/mmlu", 47, "gpt-4-0613", "loops",
         "Four searches ('ALH84001', '... evidence for life', '... PAHs', '... Magnetite grains') return the identical Allan Hills 84001 summary four times, the thought twice saying it brought nothing new; the last step, where the harness asks for an answer, is a guess.",
         1, "same result from slightly different args",
         NONOTE + " The guess at the cap happens to be right (success); the label is the process."),
    mint("mint-claude2-fbgpt4-mmlu-50", "claude-2", FB, "reasoning/mmlu", 50, "claude-2 (feedback by gpt-4-0613)", "loops",
         "Four Jupiter heat queries return the identical Jupiter summary while the expert says three times that the query did not change enough; a fifth variant is written at the cap beside a guessed answer.",
         1, "same result from slightly different args",
         FBNOTE + " The same task as mint-codellama34b-fbgpt4-mmlu-50; the guess is right here."),
    mint("mint-claudeinstant1-fbgpt4-mmlu-56", "claude-instant-1", FB, "reasoning/mmlu", 56, "claude-instant-1 (feedback by gpt-4-0613)", "loops",
         "After a first search, three queries that add words to 'drought relief Han Dynasty' return the identical Han dynasty summary three times while the expert repeats 'refine the search term'; then a guess at the cap.",
         2, "same result from slightly different args", FBNOTE),
    mint("mint-gpt35-fbgpt4-mmlu-75", "gpt-3.5-turbo-0613", FB, "reasoning/mmlu", 75, "gpt-3.5-turbo-0613 (feedback by gpt-4-0613)", "loops",
         "Every search opens with the same Ionic radius summary (printed at step 1, as a return value at 2-4); steps 2 and 4 send the identical 'ionic radius K+' search and get the identical result, step 3's differs only in its second page, and the expert says NOT GOOD each time; then an answer from knowledge at the cap.",
         1, "same result from slightly different args", FBNOTE + " An a-b-a shape inside the same-result run."),
    mint("mint-claude2-fbgpt4-hotpotqa-26", "claude-2", FB, "reasoning/hotpotqa", 26, "claude-2 (feedback by gpt-4-0613)", "loops",
         "Three queries that reorder the same words ('Baroque composer sonatas Op. 5', 'Italian Baroque ...', 'Baroque composer Op. 5 sonatas') return the identical Sonata summary, a fourth brings an unrelated Beethoven page, and the fifth goes back to a reordering at the cap.",
         1, "same result from slightly different args", FBNOTE + " The last call is unanswered at the cap."),
    mint("mint-claude2-fbgpt4-alfworld-heatmug", "claude-2", FB, "decision_making/alfworld",
         "pick_heat_then_place_in_recep-Mug-None-CoffeeMachine-10/trial_T20190907_171806_406231",
         "claude-2 (feedback by gpt-4-0613)", "loops",
         "Three rewrites of the same search loop keep the bug that parses the object name as '1.', and print the identical observation three times while the expert repeats the same diagnosis; then two made-up step lists are proposed.",
         1, "same result from slightly different args", FBNOTE + " ALFWorld; ends on the proposal cap."),
    mint("mint-gpt4-fbgpt4-alfworld-cleanknife", "gpt-4-0613", FB, "decision_making/alfworld",
         "pick_clean_then_place_in_recep-Knife-None-CounterTop-10/trial_T20190909_110531_148235",
         "gpt-4-0613 (feedback by gpt-4-0613)", "loops",
         "Take-clean-put on the wrong object name answers 'Nothing happens.' three times with the identical observation; steps 3 and 4 send the identical cell, the thought says 'I made a mistake again' and the expert's feedback is the same both times; then a plan instead of an answer.",
         2, "failure loop", FBNOTE + " ALFWorld; the failure is an ordinary observation, not an error."),
    # 2. a-b-a-b alternations with identical outputs.
    mint("mint-gpt4-humaneval-20", "gpt-4-0613", "F=None", "code_generation/humaneval", 20, "gpt-4-0613", "loops",
         "An a-b-a-b ping-pong: the same function with its asserts (AssertionError) and the same print(solve(1000)) (110) alternate twice, the thought of step 3 saying it will correct the function and sending it unchanged; step 5 repeats step 3's thought word for word and proposes the same function.",
         1, "cycle", NONOTE),
    mint("mint-llama2-70bchat-mmlu-24", "Llama-2-70b-chat-hf", "F=None", "reasoning/mmlu", 24, "Llama-2-70b-chat-hf", "loops",
         "An a-b-a-b ping-pong: the identical 'Predicate logic' search and the identical 1,900-character analysis without a tag (answered 'I don't understand your input') alternate twice; the cap's last step answers.",
         1, "cycle", NONOTE + " The answer at the cap is right."),
    # 3. Nearly identical thoughts (with identical calls).
    mint("mint-codellama34b-gsm8k-5", "CodeLlama-34b-Instruct-hf", "F=None", "reasoning/gsm8k", 5, "CodeLlama-34b-Instruct-hf", "loops",
         "The identical cell prints 32 four times in a row, steps 2-4 with the identical thought, before 32 is proposed at the cap.",
         1, "identical calls", NONOTE + " Nearly identical thoughts and identical calls; the answer was there at step 1."),
    mint("mint-lemur70bchat-fbgpt4-mbpp-84", "lemur-70b-chat-v1", FB, "code_generation/mbpp", 84, "lemur-70b-chat-v1 (feedback by gpt-4-0613)", "loops",
         "Steps 2-4 run the identical function and call (Out: False) while each thought claims a new simplification and the expert says three times 'You can now try to submit the solution'; it proposes only at the cap.",
         2, "identical calls", FBNOTE),

    # Hard negatives: the same output 3-4 times, then an answer or a new approach.
    mint("mint-llama3-70b-mmlu-47", "Meta-Llama-3-70B-Instruct", "F=None", "reasoning/mmlu", 47, "Meta-Llama-3-70B-Instruct", "healthy",
         "Three searches return the identical Allan Hills 84001 summary (steps 2 and 3 with the identical thought, searching 'to confirm'), then it answers on its own with a step to spare, correctly.",
         None, "same result three times, then an answer before the cap", NONOTE),
    mint("mint-llama2-70bchat-mmlu-73", "Llama-2-70b-chat-hf", "F=None", "reasoning/mmlu", 73, "Llama-2-70b-chat-hf", "healthy",
         "Three NMR searches (two of them identical) return the identical summary, then it leaves the search, works the Larmor formula, proposes a wrong answer and corrects it on the last step.",
         None, "same result three times, then a new approach", NONOTE + " A short stall that the agent ends itself."),
    mint("mint-gpt4-hotpotqa-18", "gpt-4-0613", "F=None", "reasoning/hotpotqa", 18, "gpt-4-0613", "healthy",
         "Three queries return the identical Iowa-class battleship summary, then a new idea ('USS New Jersey Vietnam War') brings a new page that names the ship; the captain is not found and it says so.",
         None, "same result three times, then a new approach", NONOTE + " Fails the task while trying new things."),
    mint("mint-claude2-fbgpt4-humaneval-27", "claude-2", FB, "code_generation/humaneval", 27, "claude-2 (feedback by gpt-4-0613)", "healthy",
         "The same output ('u', 'U') comes back four times from code that grows each step with the edge case the expert asked for; the final function is correct.",
         None, "same output from code that changes with new input", FBNOTE),
    mint("mint-gpt35-fbgpt4-humaneval-15", "gpt-3.5-turbo-0613", FB, "code_generation/humaneval", 15, "gpt-3.5-turbo-0613 (feedback by gpt-4-0613)", "healthy",
         "'[Executed Successfully with No Output]' four times: base cases, recursion, memoisation, then the tests, each the step the expert asked for; the solution is correct.",
         None, "same short output from code that grows step by step", FBNOTE),
    # Hard negatives: alternations with progress.
    mint("mint-gpt35-humaneval-15", "gpt-3.5-turbo-0613", "F=None", "code_generation/humaneval", 15, "gpt-3.5-turbo-0613", "healthy",
         "Define, test (AssertionError), fix the base case, run the identical test cell again (passes), propose: an edit-test alternation whose test call repeats with a new result; correct.",
         None, "re-running tests after an edit (a-b-a'-b)", NONOTE),
    mint("mint-llama2-70bchat-alfworld-twosoapbar", "Llama-2-70b-chat-hf", "F=None", "decision_making/alfworld",
         "pick_two_obj_and_place-SoapBar-None-GarbageCan-424/trial_T20190909_064053_839817",
         "Llama-2-70b-chat-hf", "healthy",
         "Search loop, take-and-put the first soap bar, the identical search loop again (now one soap bar fewer), take-and-put the second: a-b-a-b' whose repeated call brings a new result; the task succeeds.",
         None, "same call repeated with a new result (a-b-a-b')", NONOTE + " ALFWorld; the last step's observation is not recorded at the cap."),
    # Hard negatives: nearly identical thoughts on steps with new results.
    mint("mint-gpt4-fbgpt4-mmlu-71", "gpt-4-0613", FB, "reasoning/mmlu", 71, "gpt-4-0613 (feedback by gpt-4-0613)", "healthy",
         "Steps 2-4 open with the same sentence ('The previous search result does not provide the specific structural units of boron allotropes.') and search the next term the expert suggests, each with a new page; the answer is correct.",
         None, "same-text", FBNOTE),
    mint("mint-gpt35-fbgpt4-theoremqa-7", "gpt-3.5-turbo-0613", FB, "reasoning/theoremqa", 7, "gpt-3.5-turbo-0613 (feedback by gpt-4-0613)", "healthy",
         "The same 760-character Cramer's-rule thought on steps 2 and 3 (and step 1 without a tag), while the code moves from an unparseable reply to a NameError to a numpy result, then rounding and the correct answer.",
         None, "same-text", FBNOTE),
    mint("mint-gpt4-mmlu-62", "gpt-4-0613", "F=None", "reasoning/mmlu", 62, "gpt-4-0613", "healthy",
         "'The wikipedia_search tool function still did not return the desired information. Let's try a different search query.' on steps 3 and 4 (nearly so on 2), each with a new query and a new page; an answer from knowledge at the cap (correct).",
         None, "same-text; sweep", NONOTE),
    mint("mint-llama2-70bchat-fbgpt4-mmlu-57", "Llama-2-70b-chat-hf", FB, "reasoning/mmlu", 57, "Llama-2-70b-chat-hf (feedback by gpt-4-0613)", "healthy",
         "The identical preamble 'I understand. Let's try searching for more specific information.' on steps 2-4, each with the new query the expert suggested; three of the four pages differ (one returns step 1's page); then a guess at the cap.",
         None, "same-text (preamble); sweep", FBNOTE + " The issue's preamble kind: the same sentence on steps that search for something new."),
    mint("mint-lemur70b-mmlu-48", "lemur-70b-v1", "F=None", "reasoning/mmlu", 48, "lemur-70b-v1", "healthy",
         "The same thought template ('From the Wikipedia search result, we can see that ... Let's search for ...') on every step while it searches one option after another, each with a new page; the answer is correct.",
         None, "same-text (template); sweep", NONOTE),

    # Unclear.
    mint("mint-gpt4-fbgpt4-mmlu-63", "gpt-4-0613", FB, "reasoning/mmlu", 63, "gpt-4-0613 (feedback by gpt-4-0613)", "unclear",
         "Four different queries: the HIV/AIDS in Russia page comes back at steps 1, 3 and 4 (a different page at 2), each query following the expert's suggestion, before an answer from knowledge; a sweep on a tool that keeps resolving to one page, or a loop from step 3.",
         None, "same result from different args", FBNOTE),
    mint("mint-llama3-70b-humaneval-27", "Meta-Llama-3-70B-Instruct", "F=None", "code_generation/humaneval", 27, "Meta-Llama-3-70B-Instruct", "unclear",
         "Steps 2-4 print the same (correct) output from rewritten code while the thought says 'still not working correctly' each time; the rewrites do add real guards (a break, an index check), and the proposal is correct.",
         None, "same output from rewritten code", NONOTE + " Compare mint-llama3-70b-humaneval-39 (loops), where the output is wrong."),
    mint("mint-lemur70bchat-humaneval-0", "lemur-70b-chat-v1", "F=None", "code_generation/humaneval", 0, "lemur-70b-chat-v1", "unclear",
         "The function works at step 1; steps 2-4 each refactor it ('The function works correctly, but it can be further optimized by ...') and print the same 'False True'; step 5 repeats step 4's thought and proposes: polishing or a loop.",
         None, "same output from rewritten code; same-text", NONOTE),
    mint("mint-gpt4-mbpp-20", "gpt-4-0613", "F=None", "code_generation/mbpp", 20, "gpt-4-0613", "unclear",
         "Two different algorithms and a variant of the second (steps 2 and 3 with the same long thought) fail the same assert with the identical 'got [3, 7, 1]'; step 4 rewrites the assert to expect [3, 7, 1] and proposes the first algorithm (wrong).",
         None, "same failure from rewritten code", NONOTE),
]


def main():
    out = manifest_batch.write(RUNS, "corpus3-manifest.json")
    manifest_batch.merge(out)


if __name__ == "__main__":
    main()
