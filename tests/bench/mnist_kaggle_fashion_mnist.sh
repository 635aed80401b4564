#!/usr/bin/env bash
# mnist-kaggle on Fashion-MNIST for 2 epochs on OpenCL: test accuracy, ms/step, memory by role.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); build="${CLTRAIN_BUILD_DIR:-$here/../../build}"; out=$(mktemp -d)
"$build/cltrain" make-model mnist-kaggle -o "$out/mk.circle" --batch_size 32
"$build/cltrain" "$out/mk.circle" --data fashion-mnist --epoch "${EPOCHS:-2}" --batch_size 32 --optimizer 2 \
  --learning_rate 0.001 --loss 2 --metric 0 --no-progress --backends opencl --report "$out/mk.json"
python3 - "$out/mk.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert all(b == "opencl" for b in r["placement"].values()), r["placement"]
print("memory:", json.dumps(r["memory"]))
print("ms/step:", [round(e["ms_per_step"], 1) for e in r["epochs"]])
print(f"test accuracy {r['test_accuracy']:.4f} (>= 0.89: {'ok' if r['test_accuracy'] >= 0.89 else 'FAILED'})")
sys.exit(0 if r["test_accuracy"] >= 0.89 else 1)
PY
