"""Datasets for trying cltrain, read from files on this machine (nothing is downloaded).

    (x_train, y_train), (x_test, y_test) = cltrain.datasets.fashion_mnist()

Fashion-MNIST comes from Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist),
or any directory holding the four idx files (gzipped or not): images as float32 in [0, 1], shape
(N, 784); labels as int64 class numbers, shape (N,).
"""

import gzip
import os

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def _idx(directory, name, header):
    for path in (os.path.join(directory, name + ".gz"), os.path.join(directory, name)):
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                return np.frombuffer(f.read(), dtype=np.uint8, offset=header)
    raise FileNotFoundError("%s[.gz] is not in %s (Debian: apt-get install dataset-fashion-mnist)" % (name, directory))


def fashion_mnist(directory=None):
    """((x_train, y_train), (x_test, y_test)): 60,000 and 10,000 images, as keras.datasets gives them
    but flattened to 784 floats in [0, 1]. directory: default $CLTRAIN_FASHION_MNIST, else Debian's."""
    directory = directory or os.environ.get("CLTRAIN_FASHION_MNIST") or FASHION_MNIST_DIR
    out = []
    for split in ("train", "t10k"):
        x = _idx(directory, split + "-images-idx3-ubyte", 16).reshape(-1, 784).astype(np.float32) / 255.0
        y = _idx(directory, split + "-labels-idx1-ubyte", 8).astype(np.int64)
        if len(x) != len(y):
            raise ValueError("%s: %s has %d images and %d labels" % (directory, split, len(x), len(y)))
        out.append((x, y))
    return tuple(out)
