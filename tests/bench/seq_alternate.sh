#!/bin/bash
# Sequence models' step times, alternating in one run: cltrain builds side by side (each a build
# directory with its cltrain) and PyTorch (tests/bench/seq_torch.py), round after round, so that
# the machine's drift falls on all of them alike. Prints one line per model and build per round;
# take the medians.
#
#   bash tests/bench/seq_alternate.sh [--rounds 5] [--python PYTHON_WITH_TORCH] BUILD_DIR...
#
# OPTIONAL: PyTorch is not a dependency of cltrain; without --python only the builds run.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5 python=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: seq_alternate.sh [--rounds N] [--python PY] BUILD_DIR..."; exit 2; }
for ((r = 1; r <= rounds; ++r)); do
  for m in text_lstm text_gru; do
    for b in "$@"; do
      out=$("$b/cltrain" bench "tests/keras/data/$m.tflite" --batch_size 8 --backends opencl --steps 30 2>&1)
      ms=$(grep -o 'median: [0-9.]*' <<< "$out" | awk '{print $2}')
      launches=$(grep -o '[0-9.]* launches' <<< "$out" | awk '{print $1}')
      echo "round $r $m $b: $ms ms/step, $launches launches"
    done
  done
  [ -z "$python" ] || "$python" tests/bench/seq_torch.py --batch_size 8 --steps 30 | sed "s/^/round $r /"
done
