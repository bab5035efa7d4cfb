#!/bin/sh
# Rebuild the AutoGPT agbenchmark runs of the corpus2 batch.
# Usage: sh build.sh path/to/report.md
# report.md = Significant-Gravitas/AutoGPT at 3203842180aa6e6eba157f552490a688141f4836,
#             benchmark/reports/autogpt/20240522T021420_full_run/report.md (MIT)
set -e
R=${1:?path to report.md}
HERE=$(dirname "$0")
OUT=${OUT:-$HERE/../..}
for t in "answerquestioncombinecsv AnswerQuestionCombineCsv 1" "answerquestioncombinecsv AnswerQuestionCombineCsv 3" \
         "revenueretrieval2 RevenueRetrieval2 1" "revenueretrieval2 RevenueRetrieval2 3"; do
  set -- $t
  python3 "$HERE/agbenchmark_report.py" "$R" --task "$2" --attempt "$3" > "$OUT/autogpt-20240522-$1-a$3.jsonl"
done
