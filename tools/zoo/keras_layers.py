#!/usr/bin/env python3
"""The Keras layer set as users write it: every built-in activation and each common layer in a
minimal model (default options, random init), converted by TensorFlow's converter with its
default options, trained 5 SGD steps (lr 0.01, batch 4, categorical cross-entropy; from logits
where the last layer has no softmax) by Keras and by cltrain from the same weights on the same
batches. Per model: the ops of the file, whether it loads and trains (else cltrain's one line),
and the largest relative difference of the losses. Prints a markdown table and writes it to
OUT_DIR/keras_layers.md. Needs tensorflow-cpu (tests/keras/make_references.sh makes a venv with
it) and cltrain's Python package on PYTHONPATH (build/python).

    PYTHONPATH=build/python build/keras-venv/bin/python tools/zoo/keras_layers.py [OUT_DIR] [--only NAME,...]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402
from tensorflow.lite.tools import flatbuffer_utils  # noqa: E402

import cltrain  # noqa: E402

L = keras.layers
BATCH, STEPS, LR = 4, 5, 0.01
OPS = {v: k for k, v in schema.BuiltinOperator.__dict__.items() if not k.startswith("_")}

ACTIVATIONS = ["relu", "sigmoid", "softplus", "softsign", "tanh", "selu", "elu", "exponential", "leaky_relu",
               "relu6", "silu", "hard_silu", "gelu", "hard_sigmoid", "mish", "log_softmax", "celu", "hard_tanh",
               "log_sigmoid", "squareplus", "tanh_shrink", "sparse_plus", "soft_shrink", "hard_shrink"]


def head(x, inp, classes=5):
    return keras.Model(inp, L.Dense(classes, activation="softmax")(L.Flatten()(x) if len(x.shape) > 2 else x))


def activation(name):
    def make():
        inp = keras.Input((12,))
        return head(L.Dense(16, activation=name)(inp), inp)
    return make


def image(layer, shape=(8, 8, 3)):
    def make():
        inp = keras.Input(shape)
        return head(layer()(inp), inp)
    return make


def sequence(layer, shape=(10, 6)):
    def make():
        inp = keras.Input(shape)
        return head(layer()(inp), inp)
    return make


def tokens(layer):
    def make():
        inp = keras.Input((10,), dtype="int32")
        return head(layer()(L.Embedding(40, 8)(inp)), inp)
    return make


def attention():
    inp = keras.Input((6, 8))
    return head(L.MultiHeadAttention(2, 4)(inp, inp), inp)


def residual():
    inp = keras.Input((8, 8, 3))
    a = L.Conv2D(3, 3, padding="same")(inp)
    return head(L.ReLU()(L.Add()([a, inp])), inp)


def logits():
    inp = keras.Input((12,))
    return keras.Model(inp, L.Dense(5)(L.Dense(16, activation="relu")(inp)))


LAYERS = {
    "Conv1D": sequence(lambda: L.Conv1D(4, 3, activation="relu")),
    "Conv2D": image(lambda: L.Conv2D(4, 3, activation="relu")),
    "Conv2D_same_stride2": image(lambda: L.Conv2D(4, 3, strides=2, padding="same")),
    "Conv2D_dilated": image(lambda: L.Conv2D(4, 3, dilation_rate=2, padding="same")),
    "SeparableConv2D": image(lambda: L.SeparableConv2D(4, 3)),
    "DepthwiseConv2D": image(lambda: L.DepthwiseConv2D(3)),
    "Conv2DTranspose": image(lambda: L.Conv2DTranspose(4, 3, strides=2)),
    "UpSampling2D": image(lambda: L.UpSampling2D()),
    "UpSampling2D_bilinear": image(lambda: L.UpSampling2D(interpolation="bilinear")),
    "MaxPooling1D": sequence(lambda: L.MaxPooling1D()),
    "AveragePooling1D": sequence(lambda: L.AveragePooling1D(2)),
    "GlobalAveragePooling1D": sequence(lambda: L.GlobalAveragePooling1D()),
    "GlobalMaxPooling1D": sequence(lambda: L.GlobalMaxPooling1D()),
    "MaxPooling2D": image(lambda: L.MaxPooling2D()),
    "AveragePooling2D": image(lambda: L.AveragePooling2D(2)),
    "GlobalAveragePooling2D": image(lambda: L.GlobalAveragePooling2D()),
    "GlobalMaxPooling2D": image(lambda: L.GlobalMaxPooling2D()),
    "ZeroPadding2D": image(lambda: L.ZeroPadding2D()),
    "Cropping2D": image(lambda: L.Cropping2D(1)),
    "BatchNormalization": image(lambda: L.BatchNormalization()),
    "LayerNormalization": sequence(lambda: L.LayerNormalization()),
    "GroupNormalization": image(lambda: L.GroupNormalization(3), (8, 8, 6)),
    "Dropout": sequence(lambda: L.Dropout(0.5)),
    "Permute": sequence(lambda: L.Permute((2, 1))),
    "Reshape": sequence(lambda: L.Reshape((6, 10))),
    "Embedding_mean": tokens(lambda: L.GlobalAveragePooling1D()),
    "MultiHeadAttention": attention,
    "residual_Add": residual,
    "SimpleRNN_unrolled": tokens(lambda: L.SimpleRNN(8, unroll=True)),
    "LSTM": tokens(lambda: L.LSTM(8)),
    "GRU": tokens(lambda: L.GRU(8)),
    "Bidirectional_LSTM_unrolled": tokens(lambda: L.Bidirectional(L.LSTM(8, unroll=True))),
    "Dense_logits": logits,
}
MODELS = {**{"activation_" + a: activation(a) for a in ACTIVATIONS}, **LAYERS}


def ops_of(tfl):
    m = flatbuffer_utils.convert_bytearray_to_object(tfl)
    names = []
    for op in m.subgraphs[0].operators:
        c = m.operatorCodes[op.opcodeIndex]
        n = OPS.get(max(c.builtinCode, c.deprecatedBuiltinCode), "?")
        if n not in names:
            names.append(n)
    return names, len(m.subgraphs)


def run(name, make):
    keras.utils.set_random_seed(1)
    try:
        model = make()
        tfl = bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    except Exception as e:  # a layer or the converter refused: the survey goes on
        return {"name": name, "ops": [], "result": "not converted: " + str(e).splitlines()[0][:120]}
    ops, subgraphs = ops_of(tfl)
    from_logits = getattr(model.layers[-1], "activation", None) is keras.activations.linear
    rng = np.random.default_rng(7)
    shape = (BATCH * STEPS,) + tuple(model.input_shape[1:])
    x = rng.integers(0, 40, shape).astype(np.int32) if model.inputs[0].dtype == "int32" else \
        rng.random(shape, dtype=np.float32)
    classes = model.output_shape[-1]
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, BATCH * STEPS)]
    initial = [w.numpy() for w in model.weights]
    row = {"name": name, "ops": ops if subgraphs == 1 else ops + ["(%d subgraphs)" % subgraphs]}
    try:
        s = cltrain.Session(tfl, backends=["cpu"], batch_size=BATCH)
        s.compile(optimizer="sgd", learning_rate=LR, add_missing_biases=True,
                  loss="categorical_crossentropy_from_logits" if from_logits else "categorical_crossentropy")
        ours = [s.train_step(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]) for i in range(STEPS)]
    except cltrain.CltrainError as e:
        row["result"] = str(e).splitlines()[0]
        return row
    model.set_weights(initial)
    model.compile(optimizer=keras.optimizers.SGD(LR),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=from_logits))
    want = [float(model.train_on_batch(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]))
            for i in range(STEPS)]
    row["diff"] = max(abs(a - b) / abs(b) for a, b in zip(ours, want))
    row["result"] = "trains"
    return row


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--only")]
    out = args[0] if args else "keras-layers-out"
    only = [a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")]
    os.makedirs(out, exist_ok=True)
    rows = [run(n, f) for n, f in MODELS.items() if not only or n in only[0]]
    trains = sum(r["result"] == "trains" for r in rows)
    lines = ["| model | file's ops | cltrain | loss vs Keras (5 SGD steps) |", "|---|---|---|---|"]
    for r in rows:
        diff = "%.1e" % r["diff"] if "diff" in r else ""
        lines.append("| %s | %s | %s | %s |" % (r["name"], ", ".join(r["ops"]), r["result"].replace("|", "/"), diff))
    lines.append("")
    lines.append("%d of %d train (tensorflow %s, keras %s)." % (trains, len(rows), tf.__version__, keras.__version__))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "keras_layers.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
