#!/usr/bin/env python3
"""Reference checkpoints and losses from onert itself (PyPI `onert` 0.1.0, its train backend), for
tests/runtime/onert_checkpoint_test.cc. Run by tests/onert/make_references.sh in a venv with onert;
nothing in the build or the tests needs onert.

    python3 onert_reference.py MODEL OUT_DIR CLTRAIN_CLI

For SGD (lr 0.01) and Adam (lr 0.001), categorical cross-entropy, batch 8, the first 40 training
images of Fashion-MNIST (pixels / 255) in order, 2 epochs of 5 steps:
  onert_<opt>_full.txt        onert's 10 per-step losses, uninterrupted
  onert_<opt>_5.ckpt          the checkpoint onert writes after step 5
  cltrain_<opt>_5.ckpt        the checkpoint cltrain's CLI writes after step 5 (epoch 1)
  onert_from_cltrain_<opt>.txt  onert's losses of steps 6-10 after importing cltrain_<opt>_5.ckpt
"""

import gzip
import os
import subprocess
import sys

import numpy as np
import onert.experimental.train as T

DATA = "/usr/share/datasets/fashion-mnist"
STEPS, BATCH, SAMPLES = 5, 8, 40


def data():
    x = np.frombuffer(gzip.open(DATA + "/train-images-idx3-ubyte.gz").read(), np.uint8, offset=16)[:SAMPLES * 784]
    y = np.frombuffer(gzip.open(DATA + "/train-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)[:SAMPLES]
    return (x.reshape(SAMPLES, 28, 28, 1).astype(np.float32) / np.float32(255.0)), np.eye(10, dtype=np.float32)[y]


def session(model, opt):
    s = T.session(model, "train")
    o = T.optimizer.adam.Adam(learning_rate=0.001) if opt == "adam" else T.optimizer.sgd.SGD(learning_rate=0.01)
    s.compile(optimizer=o, loss=T.losses.cce.CategoricalCrossentropy(), batch_size=BATCH)
    return s


def steps(s, x, y, first, last):
    out = []
    for i in range(first, last):
        b = i % STEPS
        r = s.train_step([x[b * BATCH:(b + 1) * BATCH]], [y[b * BATCH:(b + 1) * BATCH]])
        out.append(float(r["loss"][0]))
    return out


def write(path, losses):
    with open(path, "w") as f:
        f.write("".join("%d %r\n" % (i + 1, l) for i, l in enumerate(losses)))


def main():
    model, out, cli = (os.path.abspath(p) for p in sys.argv[1:4])
    x, y = data()
    # onert 0.1.0's Python binding passes checkpoint paths to C++ through a string that is gone by
    # the time they are used; a name short enough for the C++ string's inline buffer (15 bytes)
    # survives. So the checkpoints get short names in OUT_DIR first, and their own names after.
    os.chdir(out)
    for opt, code, lr in (("adam", "2", "0.001"), ("sgd", "1", "0.01")):
        write("onert_%s_full.txt" % opt, steps(session(model, opt), x, y, 0, 2 * STEPS))
        s = session(model, opt)
        steps(s, x, y, 0, STEPS)
        short = "o%s.ckpt" % opt[0]
        s.session.train_export_checkpoint(short)
        os.replace(short, "onert_%s_5.ckpt" % opt)
        short = "c%s.ckpt" % opt[0]
        subprocess.run([cli, model, "--data", "fashion-mnist", "--data_limit", str(SAMPLES), "--no-shuffle",
                        "--epoch", "1", "--batch_size", str(BATCH), "--optimizer", code, "--learning_rate", lr,
                        "--loss", "2", "--backends", "cpu", "--no-cache", "--no-progress", "--export_checkpoint",
                        short], check=True, capture_output=True)
        s = session(model, opt)
        s.session.train_import_checkpoint(short)
        os.replace(short, "cltrain_%s_5.ckpt" % opt)
        write("onert_from_cltrain_%s.txt" % opt, steps(s, x, y, STEPS, 2 * STEPS))


if __name__ == "__main__":
    main()
