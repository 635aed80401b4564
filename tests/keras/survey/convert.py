import os, sys, traceback
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import numpy as np
import tensorflow as tf
import keras
from keras import layers

# Output folder: the first argument, else ./survey-out (nothing here is read by the build or the tests).
OUT = sys.argv[1] if len(sys.argv) > 1 else "survey-out"
os.makedirs(OUT, exist_ok=True)
keras.utils.set_random_seed(0)


def text_rnn(cell, unroll=True, batch_size=None):
    inp = keras.Input((32,), dtype="int32", batch_size=batch_size)
    x = layers.Embedding(1000, 32)(inp)
    x = cell(64, unroll=unroll)(x)
    out = layers.Dense(4, activation="softmax")(x)
    return keras.Model(inp, out)


class PosEmbedding(layers.Layer):
    """token embedding + learned positional embedding (added)."""
    def __init__(self, vocab, maxlen, dim, **kw):
        super().__init__(**kw)
        self.tok = layers.Embedding(vocab, dim)
        self.pos = layers.Embedding(maxlen, dim)
        self.maxlen = maxlen

    def call(self, x):
        positions = keras.ops.arange(0, self.maxlen, 1)
        return self.tok(x) + self.pos(positions)


def transformer():
    inp = keras.Input((32,), dtype="int32")
    x = PosEmbedding(1000, 32, 64)(inp)
    for _ in range(2):
        a = layers.MultiHeadAttention(num_heads=4, key_dim=16)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, a]))
        f = layers.Dense(128, activation="relu")(x)
        f = layers.Dense(64)(f)
        x = layers.LayerNormalization()(layers.Add()([x, f]))
    x = layers.GlobalAveragePooling1D()(x)
    out = layers.Dense(4, activation="softmax")(x)
    return keras.Model(inp, out)


def randomize(model):
    """give every weight (incl. zero-init biases, LN gamma/beta) distinct nonzero values,
    as a trained model would have."""
    rng = np.random.default_rng(1)
    for w in model.weights:
        w.assign((rng.standard_normal(w.shape) * 0.1 + 0.05).astype(np.float32))
    return model


def convert(name, model):
    print(f"=== {name}", flush=True)
    try:
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        data = conv.convert()
    except Exception as e:
        msg = "".join(traceback.format_exception_only(type(e), e))
        print(f"FAILED {name}: {msg}", flush=True)
        with open(f"{OUT}/{name}.error.txt", "w") as f:
            f.write(msg)
        return None
    path = f"{OUT}/{name}.tflite"
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(data)} bytes)", flush=True)
    # sanity: run keras vs tflite on one input
    try:
        bs = model.inputs[0].shape[0] or 2
        x = np.random.randint(0, 1000, size=(bs, 32)).astype(np.int32)
        ref = model(x).numpy()
        it = tf.lite.Interpreter(model_content=data)
        d = it.get_input_details()[0]
        if d["shape"][0] != bs:
            it.resize_tensor_input(d["index"], [bs, 32])
        it.allocate_tensors()
        it.set_tensor(d["index"], x)
        it.invoke()
        got = it.get_tensor(it.get_output_details()[0]["index"])
        print(f"  check batch={bs}: max|keras-tflite| = {np.abs(ref-got).max():.3g}", flush=True)
        np.save(f"{OUT}/{name}.in.npy", x)
        np.save(f"{OUT}/{name}.ref.npy", ref)
    except Exception as e:
        print(f"  check failed: {e}", flush=True)
    return data


def extra():
    # unrolled LSTM with fixed batch: does the SHAPE/FILL chain fold away?
    convert("text_lstm_b8", text_rnn(layers.LSTM, batch_size=8))
    # open batch, no unroll, with the flags the converter error suggests
    m = text_rnn(layers.LSTM, unroll=False)
    print("=== text_lstm_nounroll_open_flex", flush=True)
    try:
        c = tf.lite.TFLiteConverter.from_keras_model(m)
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
        c._experimental_lower_tensor_list_ops = False
        d = c.convert()
        open(f"{OUT}/text_lstm_nounroll_open_flex.tflite", "wb").write(d)
        print("wrote flex variant", len(d), flush=True)
    except Exception as e:
        print("FAILED flex:", str(e)[:2000], flush=True)


if __name__ == "__main__" and sys.argv[1:2] == ["extra"]:
    extra()
elif __name__ == "__main__":
    which = sys.argv[1:] or ["text_lstm", "text_gru", "transformer",
                             "text_lstm_nounroll_b8", "text_lstm_nounroll_open"]
    for w in which:
        if w.endswith("_rand"):
            base = w[:-5]
            m = {"text_lstm": lambda: text_rnn(layers.LSTM), "text_gru": lambda: text_rnn(layers.GRU),
                 "transformer": transformer}[base]()
            convert(w, randomize(m))
            continue
        if w == "text_lstm":
            convert(w, text_rnn(layers.LSTM))
        elif w == "text_gru":
            convert(w, text_rnn(layers.GRU))
        elif w == "transformer":
            convert(w, transformer())
        elif w == "text_lstm_nounroll_b8":
            convert(w, text_rnn(layers.LSTM, unroll=False, batch_size=8))
        elif w == "text_lstm_nounroll_open":
            convert(w, text_rnn(layers.LSTM, unroll=False))

