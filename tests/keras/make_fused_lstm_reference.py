#!/usr/bin/env python3
"""Remakes lstm_fused and bilstm_fused (.tflite and .json: the references MatchesKeras.FiveSteps reads):
tf_keras 2.x (pip install tf_keras, the TensorFlow's version) with a fixed batch, whose LSTM the
converter fuses into UNIDIRECTIONAL_SEQUENCE_LSTM (24 inputs: per gate an input and a recurrent
weight and a bias; unit_forget_bias's equal zero biases of the i, c, o gates kept as one tensor;
cell_clip 10). Embedding(100, 6) -> LSTM(8) -> Dense(4, softmax), 10 steps, batch 8, and the same
with Bidirectional(LSTM(8)) (two fused LSTMs, the backward one reading a REVERSE_V2 of the
sequence): 5 steps of
SGD and of Adam with tf_keras's train_on_batch, and the trained weights keyed by the file's
operator and input slot. Run from the repository root:

    build/keras-venv/bin/python tests/keras/make_fused_lstm_reference.py
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf
import tf_keras as keras
from tensorflow.lite.tools import flatbuffer_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_references import BATCH, OUT, STEPS, floats  # noqa: E402

VOCAB, SEQ, UNITS, CLASSES = 100, 10, 8, 4


def make(name):
    x_in = keras.Input((SEQ,), batch_size=BATCH, dtype="int32")
    lstm = keras.layers.LSTM(UNITS)
    h = (keras.layers.Bidirectional(lstm) if name == "bilstm_fused" else lstm)(keras.layers.Embedding(VOCAB, 6)(x_in))
    out = keras.layers.Dense(CLASSES, activation="softmax",
                             bias_initializer=keras.initializers.RandomNormal(stddev=0.05))(h)
    return keras.Model(x_in, out)


def reference(name):
    keras.utils.set_random_seed(1)
    model = make(name)
    tfl = bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    m = flatbuffer_utils.convert_bytearray_to_object(tfl)
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in m.operatorCodes]
    ops = m.subgraphs[0].operators
    of = lambda code: [i for i, o in enumerate(ops) if codes[o.opcodeIndex] == code]  # noqa: E731
    lstms, dense, gather, reverse = of(44), of(9), of(36), of(105)
    if len(dense) != 1 or len(gather) != 1 or len(lstms) != (2 if name == "bilstm_fused" else 1):
        sys.exit("%s: the converter did not write the operators expected: %s" % (name, codes))
    with open(os.path.join(OUT, name + ".tflite"), "wb") as f:
        f.write(tfl)
    # Which LSTM operator is the backward layer: the one whose sequence a REVERSE_V2 wrote.
    reversed_seq = {ops[i].outputs[0] for i in reverse}
    layers = {"forward": [], "backward": []}
    for i in lstms:
        layers["backward" if ops[i].inputs[0] in reversed_seq else "forward"].append(i)
    emb = model.layers[1].weights[0]
    rnn = model.layers[2]
    cells = {"forward": rnn.forward_layer.weights, "backward": rnn.backward_layer.weights} \
        if name == "bilstm_fused" else {"forward": rnn.weights}
    dk, db = model.layers[3].weights

    def weights():
        out = {"%d:0" % gather[0]: floats(emb.numpy()), "%d:1" % dense[0]: floats(dk.numpy().T),
               "%d:2" % dense[0]: floats(db.numpy())}
        for direction, (kernel, recurrent, bias) in cells.items():
            op = layers[direction][0]
            for g in range(4):  # Keras's gate order i, f, c, o is the operator's
                cols = slice(g * UNITS, (g + 1) * UNITS)
                out["%d:%d" % (op, 1 + g)] = floats(kernel.numpy()[:, cols].T)
                out["%d:%d" % (op, 5 + g)] = floats(recurrent.numpy()[:, cols].T)
                out["%d:%d" % (op, 12 + g)] = floats(bias.numpy()[cols])
        return out

    rng = np.random.default_rng(7)
    # No id twice in a batch: tf_keras's Adam squares an embedding's gradient per occurrence of an id
    # (its sparse update), where Keras 3 and cltrain square the row's summed gradient.
    x = np.concatenate([rng.permutation(VOCAB)[:BATCH * SEQ].reshape(BATCH, SEQ) for _ in range(STEPS)]).astype(np.int32)
    y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH * STEPS)]
    initial = model.get_weights()
    ref = {"model": name + ".tflite", "batch": BATCH, "steps": STEPS, "add_missing_biases": False,
           "from_logits": False, "x": [int(v) for v in x.ravel()], "x_int32": True, "y": floats(y), "runs": {}}
    for opt, lr in (("sgd", 0.01), ("adam", 0.001)):
        model.set_weights(initial)
        model.compile(optimizer=keras.optimizers.SGD(lr) if opt == "sgd" else keras.optimizers.Adam(lr),
                      loss="categorical_crossentropy")
        losses = [float(model.train_on_batch(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]))
                  for i in range(STEPS)]
        ref["runs"][opt] = {"learning_rate": lr, "losses": losses, "weights": weights()}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(ref, f)
    print(name, len(tfl), "bytes; operators", [codes[o.opcodeIndex] for o in ops])


def main():
    for name in ("lstm_fused", "bilstm_fused"):
        reference(name)


if __name__ == "__main__":
    main()
