#!/usr/bin/env bash
# The pull request's plan and comment: plans SPEC against the state this job
# sees (the spec's backend "s3" when it names one: read-only credentials are
# enough, and the lanes that already ran there are unchanged; else nothing
# has run), saves the plan, and writes comment.md: the diff against the
# base's spec (BASE_DIR/SPEC, planned from scratch) and what is still to run
# and costs. Exit status: 1 when the plan has errors (a preflight error
# fails the check before anyone spends GPU time), else 0. Writes plan.txt,
# plan.bin (when there is work), comment.md, and exitcode= (plan's
# -detailed-exitcode: 0 nothing to do, 1 errors, 2 changes) to GITHUB_OUTPUT.
# usage: SPEC=DIR plan-pr.sh BASE_DIR
set -uo pipefail
base=${1:?usage: SPEC=DIR plan-pr.sh BASE_DIR}
spec=${SPEC:?set SPEC to the spec directory}
infercrane plan -no-color -detailed-exitcode -out plan.bin "$spec" > plan.txt 2> plan.err
code=$?
cat plan.txt
cat plan.err >&2
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "exitcode=$code" >> "$GITHUB_OUTPUT"; fi
{
  if [ -d "$base/$spec" ]; then
    infercrane diff -no-color -format markdown "$base/$spec" "$spec"
  else
    echo "**InferCrane** new spec \`$spec\`."
  fi
  echo
  case $code in
    0) echo "**Nothing to run**: every lane of this spec has run in the state this job sees." ;;
    2) echo "**Still to run** (planned against the state this job sees): $(head -n 1 plan.txt)" ;;
    *)
      echo "**The plan has errors:**"
      echo
      echo '```'
      if grep -q '^Preflight:' plan.txt; then sed -n '/^Preflight:/,/^Assumptions:/p' plan.txt | sed '$d'; fi
      cat plan.err
      echo '```'
      ;;
  esac
} > comment.md
cat comment.md
[ "$code" -ne 1 ]
