#!/usr/bin/env python3
"""Trains a model (the mlp: cltrain make-model mlp -o mlp.circle) on Fashion-MNIST from Python,
then reports its accuracy on the 10,000 test images and exports it.

    python3 train_mlp.py MODEL [--data DIR] [--epochs N] [--batch N] [--limit N]
                         [--backends LIST] [--export FILE]

Needs numpy and import cltrain (PYTHONPATH=PREFIX/lib/python3/dist-packages after
cmake --install, or build/python in a build tree).
"""

import argparse
import gzip
import os
import sys

import numpy as np

import cltrain


def load_idx(directory, name, header):
    for path in (os.path.join(directory, name + ".gz"), os.path.join(directory, name)):
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                return np.frombuffer(f.read(), dtype=np.uint8, offset=header)
    sys.exit("train_mlp.py: %s[.gz] not found in %s" % (name, directory))


def load(directory, split):
    x = load_idx(directory, split + "-images-idx3-ubyte", 16).reshape(-1, 784).astype(np.float32) / 255.0
    y = load_idx(directory, split + "-labels-idx1-ubyte", 8).astype(np.int64)
    return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=0, help="use only the first N training images")
    p.add_argument("--backends", default="opencl")
    p.add_argument("--export")
    a = p.parse_args()

    x_train, y_train = load(a.data, "train")
    x_test, y_test = load(a.data, "t10k")
    if a.limit:
        x_train, y_train = x_train[:a.limit], y_train[:a.limit]
    try:
        s = cltrain.Session(a.model, backends=a.backends.split(","), batch_size=a.batch)
        s.compile(optimizer="adam", learning_rate=0.001, loss="categorical_crossentropy")
        for w in s.warnings:
            print("warning:", w, file=sys.stderr)
        m = s.memory()[0]
        print("training on %s (%s), %d bytes of planned memory" % (m["backend"], m["device"], m["pool_bytes"]))
        s.fit(x_train, y_train, epochs=a.epochs, validation_split=0.1)
        print("test accuracy: %.4f" % s.accuracy(x_test, y_test))
        if a.export:
            s.export_circle(a.export)
            print("wrote", a.export)
    except cltrain.CltrainError as e:
        sys.exit("train_mlp.py: %s" % e)


if __name__ == "__main__":
    main()
