#!/bin/sh
# Mutation testing of the core packages with mutmut 2 (outside CI: slow, run it on a schedule).
#
#   pip install 'mutmut>=2.5,<3'        # or: pip install -e '.[mutation]'
#   devtools/mutation.sh                   # every package: fabric/ nodes/ orchestrator/ schemes/kit/
#   devtools/mutation.sh schemes/kit/_stats.py,fabric/_codec.py   # some files or folders (comma-separated)
#   git diff OLD -- nodes/ > /tmp/p.diff; devtools/mutation.sh nodes/ --use-patch-file /tmp/p.diff   # changed lines only
#   python -m mutmut results            # survivors by file; `python -m mutmut show ID` shows one
#
# mutmut changes the source files in place, one mutant at a time (and puts each back), so
# run it in a checkout you do not edit meanwhile. Each mutant runs only the tests that guard
# its module (devtools/mutation/run_tests.py); results are kept in .mutmut-cache, and a rerun
# after a test change re-tests only the mutants that survived.
set -eu
cd "$(dirname "$0")/.."
paths="${1:-fabric/,nodes/,orchestrator/,schemes/kit/}"
[ $# -gt 0 ] && shift  # the rest go to mutmut run as they are
# mutmut's own timeout is twice its baseline run (the default selection, a few seconds)
# plus --test-time-base: a module's selection takes longer than that when its mutant
# survives the first file, so the base is the runner's own hang limit (run_tests.py's
# TIMEOUT_S), and a mutant is "timeout" only when it really hangs the tests.
PYTHONPATH=devtools/mutation exec nice -n 15 python -m mutmut run --paths-to-mutate "$paths" \
    --runner "python devtools/mutation/run_tests.py" --tests-dir tests/ --no-progress --simple-output \
    --test-time-base 300 "$@"
