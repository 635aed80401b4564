#!/usr/bin/env python3
"""Keras recurrent layers as users write them (default options, random init):
Embedding(1000, 32) -> layer -> Dense(10, softmax), sequence length 20, batch 8; 5 SGD steps
(lr 0.01) on OpenCL from Keras's own weights on Keras's batches, and the largest relative
difference to Keras's losses.

By default through cltrain.convert.from_keras (which unrolls the layers). With --while, as a user
converts them without cltrain: TensorFlow's converter, default options, the batch fixed at 8
(Keras 3 writes each layer as a WHILE loop, which cltrain unrolls at load); then 5 steps of SGD
and of Adam (lr 0.01) against Keras, and the trained model exported as .tflite (still the WHILE
loops), run by TensorFlow Lite's interpreter against cltrain's own predictions.

With --while --mask, the Embedding has mask_zero=True and each sequence is padded with 0s.

    PYTHONPATH=build/python build/keras-venv/bin/python tools/zoo/keras_rnns.py [--while [--mask]] [NAME ...]
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


def run_while(name, out_dir, mask=False):
    import contextlib
    import io
    import tensorflow as tf
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 1000, (5, 8, 20))
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, (5, 8))]
    if mask:  # padded sequences: each row's tail is 0, which Embedding(mask_zero=True) masks
        for b in range(5):
            for r in range(8):
                ids[b, r, rng.integers(5, 20):] = 0
    parts = []
    for opt in ("sgd", "adam"):
        keras.utils.set_random_seed(3)
        x = keras.Input((20,), dtype="int32", batch_size=8)
        h = LAYERS[name]()(L.Embedding(1000, 32, mask_zero=mask)(x))
        model = keras.Model(x, L.Dense(10, activation="softmax")(h))
        path = os.path.join(out_dir, name + ".tflite")
        with contextlib.redirect_stdout(io.StringIO()):
            open(path, "wb").write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
        try:
            s = cltrain.Session(path, backends=["opencl"])
            s.compile(optimizer=opt, learning_rate=0.01, loss="categorical_crossentropy", add_missing_biases=True)
            ours = [s.train_step(a, b) for a, b in zip(ids, ys)]
            placement = sorted(set(s.placement()))
        except Exception as e:  # the survey goes on
            return "%-32s not trained: %s" % (name, str(e).splitlines()[0][:150])
        model.compile(optimizer=keras.optimizers.SGD(0.01) if opt == "sgd" else keras.optimizers.Adam(0.01),
                      loss="categorical_crossentropy")
        theirs = [float(model.train_on_batch(a, b)) for a, b in zip(ids, ys)]
        parts.append("%s %.2e" % (opt, max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))))
        exported = os.path.join(out_dir, name + "_trained.tflite")
        s.export_circle(exported)
        interpreter = tf.lite.Interpreter(model_path=exported)
        interpreter.allocate_tensors()
        inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
        interpreter.set_tensor(inp["index"], ids[0].astype(inp["dtype"]))
        interpreter.invoke()
        tfl = interpreter.get_tensor(out["index"])
        ours_pred = s.predict(ids[0])
        parts.append("TFLite runs the export within %.1e" % float(np.max(np.abs(tfl - ours_pred))))
    return "%-24s loss within %s of Keras over 5 steps; operators on %s" % (name, ", ".join(parts),
                                                                          ",".join(placement))


def main():
    args = sys.argv[1:]
    rolled, mask = "--while" in args, "--mask" in args
    names = [a for a in args if a not in ("--while", "--mask")] or list(LAYERS)
    with tempfile.TemporaryDirectory() as out_dir:
        for name in names:
            print(run_while(name, out_dir, mask) if rolled else run(name, out_dir), flush=True)


if __name__ == "__main__":
    main()
