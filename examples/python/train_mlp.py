#!/usr/bin/env python3
"""Trains a model (the mlp: cltrain make-model mlp -o mlp.circle) on Fashion-MNIST from Python,
then reports its accuracy on the 10,000 test images and exports it.

    python3 train_mlp.py MODEL [--data DIR] [--epochs N] [--batch N] [--limit N]
                         [--backends LIST] [--export FILE]

Needs import cltrain: `pip install .` from a clone, or PYTHONPATH=PREFIX/lib/python3/dist-packages
after cmake --install, or build/python in a build tree.
"""

import argparse
import sys

import cltrain


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--data", default=cltrain.datasets.FASHION_MNIST_DIR)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=0, help="use only the first N training images")
    p.add_argument("--backends", default="opencl")
    p.add_argument("--export")
    a = p.parse_args()

    try:
        (x_train, y_train), (x_test, y_test) = cltrain.datasets.fashion_mnist(a.data)
    except (OSError, ValueError) as e:
        sys.exit("train_mlp.py: %s" % e)
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
