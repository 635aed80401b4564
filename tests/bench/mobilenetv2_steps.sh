#!/usr/bin/env bash
# mobilenetv2 at batch 10, Adam, one fixed random batch: the loss falls over 10 steps on OpenCL and
# the first 3 steps' losses match the CPU backend within 1e-3 relative.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); build="${CLTRAIN_BUILD_DIR:-$here/../../build}"; out=$(mktemp -d)
"$build/cltrain" make-model mobilenetv2 -o "$out/mb.circle" --batch_size 10
"$build/cltrain" bench "$out/mb.circle" --batch_size 10 --optimizer 2 --warmup 0 --steps 10 --backends opencl --report "$out/opencl.json"
"$build/cltrain" bench "$out/mb.circle" --batch_size 10 --optimizer 2 --warmup 0 --steps 3 --backends cpu --report "$out/cpu.json"
python3 - "$out/opencl.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert all(b == "opencl" for b in r["placement"].values()), r["placement"]
l = [s["loss"] for s in r["steps"]]
print("memory:", json.dumps(r["memory"]))
print(f"losses {l[0]:.4f} -> {l[-1]:.4f}: {'falls' if l[-1] < l[0] else 'DOES NOT FALL'}; median {r['ms_per_step']:.0f} ms/step")
sys.exit(0 if l[-1] < l[0] else 1)
PY
python3 "$here/compare_reports.py" "$out/cpu.json" "$out/opencl.json" 1e-3 3
