#!/usr/bin/env python3
"""Resumes onert's checkpoints with cltrain and compares per-step losses both ways (run by
tests/onert/make_references.sh MODEL after the references):

    python3 compare.py DIR MODEL CLTRAIN_CLI BACKEND

  onert -> cltrain: cltrain resumes onert_<opt>_5.ckpt for steps 6-10 against onert's uninterrupted run
  cltrain -> onert: onert's steps 6-10 from cltrain_<opt>_5.ckpt against cltrain's uninterrupted run
Prints the largest difference of each and exits 1 if one exceeds 1e-6.
"""

import os
import subprocess
import sys
import tempfile


def losses(path, cols):
    with open(path) as f:
        return [float(line.split()[cols]) for line in f if line.strip()]


def main():
    d, model, cli, backend = sys.argv[1:5]
    worst = 0.0
    for opt, code, lr in (("adam", "2", "0.001"), ("sgd", "1", "0.01")):
        args = [cli, model, "--data", "fashion-mnist", "--data_limit", "40", "--no-shuffle", "--batch_size", "8",
                "--optimizer", code, "--learning_rate", lr, "--loss", "2", "--backends", backend, "--no-cache",
                "--no-progress", "--epoch", "2"]
        with tempfile.TemporaryDirectory() as t:
            full, resumed = os.path.join(t, "full.txt"), os.path.join(t, "resumed.txt")
            subprocess.run(args, check=True, capture_output=True, env=dict(os.environ, CLTRAIN_STEP_LOG=full))
            subprocess.run(args + ["--checkpoint", os.path.join(d, "onert_%s_5.ckpt" % opt)], check=True,
                           capture_output=True, env=dict(os.environ, CLTRAIN_STEP_LOG=resumed))
            ours_full, ours_resumed = losses(full, 2), losses(resumed, 2)
        onert_full = losses(os.path.join(d, "onert_%s_full.txt" % opt), 1)
        onert_resumed = losses(os.path.join(d, "onert_from_cltrain_%s.txt" % opt), 1)
        a = max(abs(x - y) for x, y in zip(ours_resumed, onert_full[5:]))
        b = max(abs(x - y) for x, y in zip(onert_resumed, ours_full[5:]))
        c = max(abs(x - y) for x, y in zip(ours_full, onert_full))
        print("%s %s: onert->cltrain steps 6-10 max |dloss| %.2e; cltrain->onert %.2e; "
              "(uninterrupted cltrain vs onert, steps 1-10: %.2e)" % (opt, backend, a, b, c))
        worst = max(worst, a, b)
    return 1 if worst > 1e-6 else 0


if __name__ == "__main__":
    sys.exit(main())
