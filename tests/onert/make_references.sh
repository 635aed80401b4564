#!/usr/bin/env bash
# Makes the onert references of tests/runtime/onert_checkpoint_test.cc (tests/runtime/data/onert)
# with onert itself: PyPI's onert 0.1.0 (its train backend) in a venv made here. Needs a built
# cltrain (build/, or $CLTRAIN_BUILD_DIR). Only for regenerating the committed files: nothing in
# the build or the tests needs onert.
#   bash tests/onert/make_references.sh              # the test model (mk_small.circle)
#   bash tests/onert/make_references.sh mnist-kaggle  # the same for mnist-kaggle (batch-1 file) into
#                                                      # build/onert-mnist-kaggle, and the comparison
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${CLTRAIN_BUILD_DIR:-build}"
venv="$build/onert-venv"
[ -x "$venv/bin/python" ] || { /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q onert==0.1.0 numpy; }
if [ "${1:-}" = "" ]; then
  out=tests/runtime/data/onert
  model=$out/mk_small.circle
else
  out="$build/onert-$1"
  mkdir -p "$out"
  model="$out/$1.circle"
  "$build/cltrain" make-model "$1" --batch_size 1 -o "$model" > /dev/null
fi
"$venv/bin/python" tests/onert/onert_reference.py "$model" "$out" "$build/cltrain"
echo "wrote $out"
if [ "${1:-}" != "" ]; then
  for backend in cpu opencl; do "$venv/bin/python" tests/onert/compare.py "$out" "$model" "$build/cltrain" $backend; done
fi
