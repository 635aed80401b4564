#!/usr/bin/env bash
# mlp on Fashion-MNIST: accuracy on OpenCL, and the CPU backend's losses against it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); build="${CLTRAIN_BUILD_DIR:-$here/../../build}"; out=$(mktemp -d)
"$build/cltrain" make-model mlp -o "$out/mlp.circle" --batch_size 32
common=(--data fashion-mnist --epoch 5 --batch_size 32 --optimizer 2 --learning_rate 0.001 --loss 2 --metric 0 --no-progress)
"$build/cltrain" "$out/mlp.circle" "${common[@]}" --backends opencl --report "$out/opencl.json"
"$build/cltrain" "$out/mlp.circle" "${common[@]}" --backends cpu --report "$out/cpu.json" > /dev/null
python3 - "$out/opencl.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert all(b == "opencl" for b in r["placement"].values()), r["placement"]
print(f"test accuracy {r['test_accuracy']:.4f} (>= 0.85: {'ok' if r['test_accuracy'] >= 0.85 else 'FAILED'})")
sys.exit(0 if r["test_accuracy"] >= 0.85 else 1)
PY
python3 "$here/compare_reports.py" "$out/cpu.json" "$out/opencl.json" 1e-4
