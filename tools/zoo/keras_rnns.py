#!/usr/bin/env python3
"""Keras recurrent layers as users write them (default options, random init) through
cltrain.convert.from_keras (which unrolls them: Keras 3 writes a rolled one as a WHILE loop):
Embedding(1000, 32) -> layer -> Dense(10, softmax), sequence length 20, batch 8; 5 SGD steps
(lr 0.01) on OpenCL from Keras's own weights on Keras's batches, and the largest relative
difference to Keras's losses.

    PYTHONPATH=build/python build/keras-venv/bin/python tools/zoo/keras_rnns.py [NAME ...]
"""
import os
import sys
import tempfile

import numpy as np
import keras

import cltrain
import cltrain.convert

L = keras.layers


def random_bias():
    return {"bias_initializer": keras.initializers.RandomNormal(stddev=0.05)}


LAYERS = {
    "lstm": lambda: L.LSTM(32),
    "gru": lambda: L.GRU(32),
    "gru_reset_before": lambda: L.GRU(32, reset_after=False),
    "simple_rnn": lambda: L.SimpleRNN(32),
    "lstm_go_backwards": lambda: L.LSTM(32, go_backwards=True),
    "bidirectional_lstm": lambda: L.Bidirectional(L.LSTM(16)),
    "bidirectional_lstm_sum": lambda: L.Bidirectional(L.LSTM(16), merge_mode="sum"),
    "stacked_lstm": lambda: keras.Sequential([L.LSTM(32, return_sequences=True), L.LSTM(32)]),
    # The same with random biases: what the converter keeps apart (no equal constants merged).
    "bidirectional_lstm_random_bias": lambda: L.Bidirectional(L.LSTM(16, **random_bias())),
    "stacked_lstm_random_bias": lambda: keras.Sequential([L.LSTM(32, return_sequences=True, **random_bias()),
                                                          L.LSTM(32, **random_bias())]),
}


def run(name, out_dir):
    keras.utils.set_random_seed(3)
    x = keras.Input((20,), dtype="int32")
    model = keras.Model(x, L.Dense(10, activation="softmax")(LAYERS[name]()(L.Embedding(1000, 32)(x))))
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 1000, (5, 8, 20))
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, (5, 8))]
    try:
        s = cltrain.convert.from_keras(model, os.path.join(out_dir, name + ".tflite"), batch_size=8,
                                       backends=["opencl"], quiet=True)
        s.compile(optimizer="sgd", learning_rate=0.01, loss="categorical_crossentropy")
        ours = [s.train_step(a, b) for a, b in zip(ids, ys)]
        placement = sorted(set(s.placement()))
    except Exception as e:  # the survey goes on
        return "%-32s not trained: %s" % (name, str(e).splitlines()[0][:150])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="categorical_crossentropy")
    theirs = [float(model.train_on_batch(a, b)) for a, b in zip(ids, ys)]
    d = max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))
    return "%-32s loss within %.2e of Keras over 5 SGD steps, operators on %s" % (name, d, ",".join(placement))


def main():
    names = sys.argv[1:] or list(LAYERS)
    with tempfile.TemporaryDirectory() as out_dir:
        for name in names:
            print(run(name, out_dir), flush=True)


if __name__ == "__main__":
    main()
