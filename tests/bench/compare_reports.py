#!/usr/bin/env python3
"""Compares per-epoch (or per-step) losses of two cltrain --report files: compare_reports.py A B TOL."""
import json
import sys


def losses(report):
    if "epochs" in report:
        return [e["loss"] for e in report["epochs"]]
    return [s["loss"] for s in report["steps"] if not s.get("warmup")]


a, b = (json.load(open(p)) for p in sys.argv[1:3])
tol = float(sys.argv[3])
count = int(sys.argv[4]) if len(sys.argv) > 4 else None
la, lb = losses(a)[:count], losses(b)[:count]
worst = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
for i, (x, y) in enumerate(zip(la, lb)):
    print(f"  {i + 1}: {x:.8f} {y:.8f} relative difference {abs(x - y) / abs(y):.2e}")
print(f"largest relative difference {worst:.2e} (limit {tol:g}): {'ok' if worst <= tol else 'FAILED'}")
sys.exit(0 if worst <= tol else 1)
