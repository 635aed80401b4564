#!/usr/bin/env python3
"""Writes the Keras reference data of tests/keras (run by make_references.sh, which makes a venv
with tensorflow-cpu; nothing in the build or the tests needs TensorFlow).

For each small model below: the .tflite that TensorFlow's converter writes with default options
(an open batch), and <name>.json with 5 batches of 8 samples and, for SGD (lr 0.01) and Adam
(lr 1e-3) with categorical cross-entropy, the losses that Keras train_on_batch returns and the
weights after the 5 steps, in the layout of the .tflite, keyed "<file operator index>:<input
slot>" (slot 2 of a FullyConnected/Conv2D/DepthwiseConv2D whose zero bias the converter dropped
is there too: cltrain trains it with add_missing_biases).

For the application models (MobileNetV2, MobileNetV3Small, EfficientNetB0): <name>.tflite.gz
with every float buffer zeroed (their structure, small enough to commit); the test refills the
weights.
"""
import gzip
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402
from tensorflow.lite.tools import flatbuffer_utils  # noqa: E402

L = keras.layers
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
OPS = {v: k for k, v in schema.BuiltinOperator.__dict__.items() if not k.startswith("_")}
BATCH, STEPS = 8, 5


def mlp_flatten():
    return keras.Sequential([keras.Input((8, 8)), L.Flatten(), L.Dense(16, activation="relu"),
                             L.Dense(10, activation="softmax")])


def cnn_pools():
    return keras.Sequential([keras.Input((10, 10, 2)), L.Conv2D(4, 3, activation="relu"), L.MaxPooling2D(2),
                             L.Conv2D(6, 3, padding="same", activation="relu"), L.AveragePooling2D(2), L.Flatten(),
                             L.Dense(10, activation="softmax")])


def dw_block():
    x = keras.Input((12, 12, 3))
    h = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    d = L.DepthwiseConv2D(3, padding="same")(h)
    d = L.ReLU(6.0)(d)
    d = L.Conv2D(8, 1)(d)
    h = L.Add()([h, d])
    h = L.GlobalAveragePooling2D()(h)
    return keras.Model(x, L.Dense(10, activation="softmax")(h))


def dense_layernorm():
    # beta starts non-zero: a zero beta is dropped by the converter together with its ADD, and
    # then the converted model has nothing for Keras's trained beta.
    x = keras.Input((16,))
    h = L.Dense(12)(x)
    h = L.LayerNormalization(beta_initializer=keras.initializers.RandomNormal(stddev=0.1, seed=3))(h)
    return keras.Model(x, L.Dense(4, activation="softmax")(h))


def shared_dense():
    x = keras.Input((8,))
    d = L.Dense(8, activation="tanh")
    return keras.Model(x, L.Dense(4, activation="softmax")(d(d(x))))


def permute_conv():
    # Keras Permute is TRANSPOSE (the batch axis stays first): [0,2,1,3] before a Conv2D, and
    # channels first ([0,3,1,2]) before the Flatten.
    x = keras.Input((6, 5, 2))
    h = L.Permute((2, 1, 3))(x)
    h = L.Conv2D(4, 3, activation="relu")(h)
    h = L.Permute((3, 1, 2))(h)
    h = L.Flatten()(h)
    return keras.Model(x, L.Dense(4, activation="softmax")(h))


def embedding_pool():
    # Int32 token ids through Embedding (the converter writes its index guard LESS/ADD/SELECT_V2
    # before the GATHER), GlobalAveragePooling1D (MEAN over the sequence), Dense.
    x = keras.Input((6,), dtype="int32")
    h = L.Embedding(20, 8)(x)
    h = L.GlobalAveragePooling1D()(h)
    return keras.Model(x, L.Dense(4, activation="softmax")(h))


def gated_slices():
    # The cuts recurrent layers convert to, on their own: SPLIT (a gated linear unit's two
    # halves), STRIDED_SLICE (time steps 1 to 4 of 6) and UNPACK (each of them, summed).
    x = keras.Input((6, 5))
    h = L.Dense(8)(x)
    a, b = L.Lambda(lambda t: keras.ops.split(t, 2, axis=-1))(h)
    h = L.Multiply()([a, L.Activation("sigmoid")(b)])
    h = L.Lambda(lambda t: t[:, 1:5, :])(h)
    steps = L.Lambda(lambda t: keras.ops.unstack(t, axis=1))(h)
    h = L.Concatenate()([steps[0], L.Add()([steps[1], steps[3]]), L.Activation("tanh")(steps[2])])
    return keras.Model(x, L.Dense(4, activation="softmax")(h))


def text_rnn(cell):
    # Embedding -> LSTM(64) or GRU(64) -> Dense, unrolled (with an open batch the converter needs
    # unroll=True: plain operators per time step). Biases start non-zero, so that the converter
    # drops none (a zero GRU bias would be, and Keras would train it).
    def init():
        return keras.initializers.RandomNormal(stddev=0.05)

    x = keras.Input((32,), dtype="int32")
    h = L.Embedding(100, 32)(x)
    h = cell(64, unroll=True, bias_initializer=init())(h)
    return keras.Model(x, L.Dense(4, activation="softmax", bias_initializer=init())(h))


def text_lstm():
    return text_rnn(L.LSTM)


def text_gru():
    return text_rnn(L.GRU)


def stacked_lstm():
    # Embedding -> LSTM(return_sequences=True) -> LSTM -> Dense, unrolled: the first layer gathers
    # its steps with PACK on axis 0 and TRANSPOSE [1, 0, 2] (the packs pass); 10 steps, so that the
    # CONCATENATIONs make a tree (at most 8 inputs each).
    def init():
        return keras.initializers.RandomNormal(stddev=0.05)

    x = keras.Input((10,), dtype="int32")
    h = L.Embedding(50, 8)(x)
    h = L.LSTM(12, return_sequences=True, unroll=True, bias_initializer=init())(h)
    h = L.LSTM(12, unroll=True, bias_initializer=init())(h)
    return keras.Model(x, L.Dense(4, activation="softmax", bias_initializer=init())(h))


class PosEmbedding(L.Layer):
    """Token embedding plus a learned position embedding (the converter folds the positions'
    GATHER into a constant table that an ADD reads)."""

    def __init__(self, vocab, length, dim, **kw):
        super().__init__(**kw)
        self.tok = L.Embedding(vocab, dim)
        self.pos = L.Embedding(length, dim)
        self.length = length

    def call(self, x):
        return self.tok(x) + self.pos(keras.ops.arange(0, self.length, 1))


def transformer():
    # A 2-layer encoder: d_model 64, 4 heads, sequence 32, LayerNormalization, a Dense
    # classifier (vocabulary 100 to keep the file small). Biases, betas and gammas start apart from
    # 0 and 1, each its own: the converter drops a zero bias together with its ADD (and Keras would
    # then train a weight the file does not have), and equal weights cannot be told apart in the
    # file. The attention's Dense layers convert as FULLY_CONNECTED (no bias) + ADD, the
    # feed-forward ones as Tensordot (RESHAPE, FULLY_CONNECTED, RESHAPE, shapes computed).
    def init(mean=0.0):  # a new initializer per layer: each draws its own values
        return keras.initializers.RandomNormal(mean=mean, stddev=0.05)

    def norm():
        return L.LayerNormalization(beta_initializer=init(), gamma_initializer=init(1.0))

    x = keras.Input((32,), dtype="int32")
    h = PosEmbedding(100, 32, 64)(x)
    for _ in range(2):
        a = L.MultiHeadAttention(num_heads=4, key_dim=16, bias_initializer=init())(h, h)
        h = norm()(L.Add()([h, a]))
        f = L.Dense(128, activation="relu", bias_initializer=init())(h)
        f = L.Dense(64, bias_initializer=init())(f)
        h = norm()(L.Add()([h, f]))
    h = L.GlobalAveragePooling1D()(h)
    return keras.Model(x, L.Dense(4, activation="softmax", bias_initializer=init())(h))


def gelu_mlp():
    # Dense(activation="gelu") is the exact (erf) form; the tanh approximation as Keras's
    # gelu(approximate=True). Both convert to GELU (builtin 150) with GeluOptions.approximate.
    x = keras.Input((16,))
    h = L.Dense(32, activation="gelu")(x)
    h = L.Activation(lambda t: keras.activations.gelu(t, approximate=True))(L.Dense(24)(h))
    return keras.Model(x, L.Dense(10, activation="softmax")(h))


def where_activations():
    # The Keras activations that choose per element (tf.where): the converter writes each as
    # comparisons of floats (GREATER, LESS, LESS_EQUAL) into bool masks, ZEROS_LIKE and SELECT_V2.
    x = keras.Input((12,))
    h = L.Dense(16, activation="selu")(x)
    h = L.Dense(16, activation="hard_shrink")(h)
    h = L.Dense(16, activation="soft_shrink")(h)
    h = L.Dense(16, activation="sparse_plus")(h)
    return keras.Model(x, L.Dense(5, activation="softmax")(h))


def tconv_decoder():
    # A convolutional autoencoder's decoder as users write it: Conv2DTranspose with strides 2 and
    # SAME padding (ReLU fused), then one with the defaults (VALID, stride 1). The converter writes
    # TRANSPOSE_CONV with its output_shape from SHAPE, STRIDED_SLICE and PACK (an open batch).
    x = keras.Input((8, 8, 2))
    h = L.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)
    h = L.Conv2DTranspose(3, 3, strides=2, padding="same", activation="relu")(h)
    h = L.Conv2DTranspose(2, 2)(h)
    return keras.Model(x, L.Dense(5, activation="softmax")(L.Flatten()(h)))


def bilinear_upsampling():
    # A segmentation head's upsampling: UpSampling2D(interpolation="bilinear") (RESIZE_BILINEAR with
    # half_pixel_centers) between convolutions.
    x = keras.Input((8, 8, 2))
    h = L.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)
    h = L.UpSampling2D(interpolation="bilinear")(h)
    h = L.Conv2D(3, 3, padding="same")(h)
    return keras.Model(x, L.Dense(5, activation="softmax")(L.Flatten()(h)))


def conv1d_maxpool():
    # A text CNN's head: Conv1D (EXPAND_DIMS, CONV_2D, SQUEEZE), GlobalMaxPooling1D (REDUCE_MAX
    # over the steps), Dense.
    x = keras.Input((12, 6))
    h = L.Conv1D(8, 3, activation="relu")(x)
    h = L.GlobalMaxPooling1D()(h)
    return keras.Model(x, L.Dense(5, activation="softmax")(h))


def pointwise_mix():
    # Activations and element-wise maths as users write them: Dense(activation="elu") (ELU),
    # the LeakyReLU layer (its default negative_slope 0.3: LEAKY_RELU), a softplus by hand
    # (EXP, ADD of 1, LOG) and a smooth absolute value (SQUARE, ADD, SQRT) beside ABS.
    x = keras.Input((12,))
    h = L.Dense(16, activation="elu")(x)
    h = L.LeakyReLU()(L.Dense(16)(h))
    h = L.Dense(16)(h)
    soft = L.Lambda(lambda t: keras.ops.log(1.0 + keras.ops.exp(t)))(h)
    smooth = L.Lambda(lambda t: keras.ops.sqrt(keras.ops.square(t) + 0.5) - keras.ops.abs(t))(h)
    return keras.Model(x, L.Dense(6, activation="softmax")(L.Concatenate()([soft, smooth])))


def logits_cnn():
    # A classifier as most tutorials now write it: the last Dense without softmax, compiled with
    # CategoricalCrossentropy(from_logits=True) (cltrain's loss 3).
    return keras.Sequential([keras.Input((10, 10, 1)), L.Conv2D(4, 3, activation="relu"), L.MaxPooling2D(2),
                             L.Flatten(), L.Dense(7)])


def dilated_convs():
    # Dilated convolutions (DeepLab's atrous ones): TensorFlow's converter writes each as
    # SPACE_TO_BATCH_ND, a VALID convolution and BATCH_TO_SPACE_ND (the dilated-convolutions pass
    # loads them as one convolution with its dilation): SAME, VALID, and a depthwise one.
    return keras.Sequential([keras.Input((11, 11, 2)),
                             L.Conv2D(4, 3, dilation_rate=2, padding="same", activation="relu"),
                             L.DepthwiseConv2D(3, dilation_rate=(2, 3), padding="same"),
                             L.Conv2D(3, 3, dilation_rate=2), L.Flatten(), L.Dense(5, activation="softmax")])


def tcn():
    # A temporal convolutional network's causal, dilated Conv1D (WaveNet's): PAD before,
    # SPACE_TO_BATCH_ND, EXPAND_DIMS, CONV_2D, RESHAPE, BATCH_TO_SPACE_ND per layer.
    return keras.Sequential([keras.Input((16, 3)),
                             L.Conv1D(6, 2, dilation_rate=2, padding="causal", activation="relu"),
                             L.Conv1D(6, 2, dilation_rate=4, padding="causal", activation="relu"),
                             L.Conv1D(4, 3, dilation_rate=2, padding="same"),
                             L.GlobalAveragePooling1D(), L.Dense(5, activation="softmax")])


def unet_tiny():
    # A U-Net's shape: Conv2D, MaxPooling2D, Conv2D, UpSampling2D (EXPAND_DIMS, TILE, RESHAPE per
    # axis; the converter declares the upsampled shapes with placeholder 1s), the skip joined by
    # Concatenate; and UpSampling1D on a sequence head.
    x = keras.Input((8, 8, 2))
    a = L.Conv2D(4, 3, padding="same", activation="relu")(x)
    b = L.Conv2D(6, 3, padding="same", activation="relu")(L.MaxPooling2D()(a))
    u = L.Concatenate()([L.UpSampling2D()(b), a])
    h = L.Conv2D(3, 3, padding="same")(u)
    s = L.UpSampling1D(3)(L.Reshape((8, 24))(h))
    return keras.Model(x, L.Dense(5, activation="softmax")(L.GlobalAveragePooling1D()(s)))


def vit_tiny():
    # A one-block vision transformer on 16x16x3 images: 4x4 patches (a strided Conv2D), 16 tokens
    # of 32, attention and an MLP with GELU, each with its residual and LayerNormalization.
    def init(mean=0.0):
        return keras.initializers.RandomNormal(mean=mean, stddev=0.05)

    x = keras.Input((16, 16, 3))
    h = L.Reshape((16, 32))(L.Conv2D(32, 4, strides=4, bias_initializer=init())(x))
    a = L.MultiHeadAttention(num_heads=2, key_dim=16, bias_initializer=init())(h, h)
    h = L.LayerNormalization(beta_initializer=init(), gamma_initializer=init(1.0))(L.Add()([h, a]))
    f = L.Dense(64, activation="gelu", bias_initializer=init())(h)
    f = L.Dense(32, bias_initializer=init())(f)
    h = L.LayerNormalization(beta_initializer=init(), gamma_initializer=init(1.0))(L.Add()([h, f]))
    h = L.GlobalAveragePooling1D()(h)
    return keras.Model(x, L.Dense(10, activation="softmax", bias_initializer=init())(h))


def while_rnn(layer, mask_zero=False):
    # Keras 3 recurrent layers with default options (zero biases, orthogonal recurrent kernels) and a
    # fixed batch: TensorFlow's converter writes each as a WHILE loop over the 10 steps (a condition
    # and a body subgraph; the loop's zero state a constant), which the while-loops pass unrolls.
    # With mask_zero, 12 ids (about 8% of them 0, which the mask skips).
    def make():
        x = keras.Input((10,), dtype="int32", batch_size=BATCH)
        h = layer()(L.Embedding(12 if mask_zero else 50, 8, mask_zero=mask_zero)(x))
        return keras.Model(x, L.Dense(4, activation="softmax")(h))
    return make


WHILE = {"while_lstm": while_rnn(lambda: L.LSTM(8)), "while_gru": while_rnn(lambda: L.GRU(8)),
         "while_simple_rnn": while_rnn(lambda: L.SimpleRNN(8)),
         # GRU's other form (the reset gate before the recurrent product), with random biases.
         "while_gru_reset_before": while_rnn(lambda: L.GRU(
             8, reset_after=False, bias_initializer=keras.initializers.RandomNormal(stddev=0.05))),
         # Random biases: the two directions' would be equal (unit_forget_bias), and which Keras
         # weight a tensor is would be a guess.
         "while_bilstm": while_rnn(lambda: L.Bidirectional(
             L.LSTM(6, bias_initializer=keras.initializers.RandomNormal(stddev=0.05)))),
         "while_masked_lstm": while_rnn(lambda: L.LSTM(8), mask_zero=True),
         "while_stacked": while_rnn(lambda: keras.Sequential([L.LSTM(8, return_sequences=True),
                                                              L.GRU(6)]))}

SMALL = {"mlp_flatten": mlp_flatten, "cnn_pools": cnn_pools, "dw_block": dw_block,
         "dense_layernorm": dense_layernorm, "shared_dense": shared_dense, "permute_conv": permute_conv,
         "embedding_pool": embedding_pool, "transformer": transformer,
         "gated_slices": gated_slices, "text_lstm": text_lstm, "text_gru": text_gru,
         "stacked_lstm": stacked_lstm,
         "gelu_mlp": gelu_mlp, "vit_tiny": vit_tiny, "conv1d_maxpool": conv1d_maxpool,
         "pointwise_mix": pointwise_mix, "logits_cnn": logits_cnn, "dilated_convs": dilated_convs, "tcn": tcn,
         "unet_tiny": unet_tiny, "where_activations": where_activations,
         "tconv_decoder": tconv_decoder, "bilinear_upsampling": bilinear_upsampling, **WHILE}


def convert(model):
    return bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())


def tflite_layout(var_value, op_name, form=0):
    """A Keras weight in the layout the converter stores it for op_name. An EinsumDense kernel
    (MultiHeadAttention's) has more than 2 dimensions: [K, heads, dim] (form 0) or [heads, dim, N]
    (form 1) as a FULLY_CONNECTED's [N, K]."""
    v = np.asarray(var_value, dtype=np.float32)
    if isinstance(form, tuple):  # ("cols", a, b): columns a:b of a 2-D kernel, each a FULLY_CONNECTED of its own
        return v[:, form[1]:form[2]].T if v.ndim == 2 and op_name == "FULLY_CONNECTED" else np.zeros(0, np.float32)
    if form >= 2:  # one row of a GRU's bias [2, 3*units] (input and recurrent), each a tensor of its own
        return v[form - 2] if v.ndim == 2 and v.shape[0] == 2 else np.zeros(0, np.float32)
    if op_name == "FULLY_CONNECTED" and v.ndim >= 2:
        return (v.reshape(v.shape[0], -1) if form == 0 else v.reshape(-1, v.shape[-1])).T
    if op_name == "CONV_2D" and v.ndim == 4:
        return v.transpose(3, 0, 1, 2)
    if op_name == "CONV_2D" and v.ndim == 3:  # a Conv1D's [K, C, N] as the CONV_2D's [N, 1, K, C]
        return v.transpose(2, 0, 1)[:, None]
    if op_name == "TRANSPOSE_CONV" and v.ndim == 4:  # Conv2DTranspose's [KH, KW, O, I] as [O, KH, KW, I]
        return v.transpose(2, 0, 1, 3)
    if op_name == "DEPTHWISE_CONV_2D" and v.ndim == 4:
        kh, kw, c, m = v.shape
        return v.reshape(1, kh, kw, c * m)
    return v


def weight_map(tfl, model):
    """(operator index, slot) -> (Keras weight index, op name) for every float constant the
    converted model's weight ops read, and for the biases it dropped."""
    m = flatbuffer_utils.convert_bytearray_to_object(tfl)
    variables = model.weights
    layer_of = {}  # weight index -> the layer's weights
    for layer in model.layers:
        idx = [i for i, v in enumerate(variables) if any(v is w for w in layer.weights)]
        for i in idx:
            layer_of[i] = idx
    out, dropped = {}, []
    # A WHILE loop's body holds its layer's weights: keys "<subgraph>/<operator>:<slot>" there.
    ops = [("" if k == 0 else "%d/" % k, op_index, op, sg) for k, sg in enumerate(m.subgraphs)
           for op_index, op in enumerate(sg.operators)]
    for prefix, op_index, op, sg in ops:
        code = m.operatorCodes[op.opcodeIndex]
        name = OPS.get(max(code.builtinCode, code.deprecatedBuiltinCode))
        if name == "WHILE":
            continue  # what a loop starts from (its zero state): not a weight
        inputs = list(op.inputs)
        kernel_var = None
        for slot, t in enumerate(inputs):
            if t < 0:
                continue
            tensor = sg.tensors[t]
            buf = m.buffers[tensor.buffer].data if tensor.buffer else None
            if buf is None or len(buf) == 0 or tensor.type != schema.TensorType.FLOAT32:
                continue
            data = np.frombuffer(bytes(buf), dtype=np.float32).reshape(tensor.shape)
            if data.size == 1:
                continue  # a fixed constant of its layer (epsilon): not a weight
            # GRU(reset_after=False)'s recurrent kernel arrives as two: columns 0:2u (z, r) and 2u:3u.
            def forms(v):
                if v.ndim != 2 or data.size >= v.size or data.size % v.shape[0] != 0:
                    return [0, 1, 2, 3]
                width = data.size // v.shape[0]
                return [0, 1, 2, 3] + [("cols", a, a + width) for a in range(v.shape[1] - width + 1)]
            found = [(i, form) for i, v in enumerate(variables) for form in forms(v.numpy())
                     if tflite_layout(v.numpy(), name, form).size == data.size and
                     np.array_equal(tflite_layout(v.numpy(), name, form).ravel(), data.ravel())]
            found = sorted(set(found), key=lambda f: str(f[1]))[:1] if len({i for i, _ in found}) == 1 else found
            if (name in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D") and slot == 2 or
                    name == "TRANSPOSE_CONV" and slot == 3) and kernel_var is not None \
                    and len(found) != 1:  # a zero bias matches every zero weight: take the layer's
                found = [(i, 0) for i in layer_of[kernel_var] if variables[i].path.endswith("bias")]
            if len(found) != 1:
                sys.exit("operator %s%d (%s) input %d: %d Keras weights match" % (prefix, op_index, name, slot,
                                                                               len(found)))
            out["%s%d:%d" % (prefix, op_index, slot)] = (found[0][0], name, found[0][1])
            if slot == 1:
                kernel_var = found[0][0]
        bias_slot = 3 if name == "TRANSPOSE_CONV" else 2  # after output_shape, weights, input
        if name in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV") and \
                (len(inputs) <= bias_slot or inputs[bias_slot] < 0):
            dropped.append((prefix + str(op_index), kernel_var, name))
    # A weight op without a bias in the file: the converter dropped its zero bias (cltrain trains
    # one with add_missing_biases), unless the layer's bias is an ADD's constant (EinsumDense).
    # A recurrent layer's step sums x W and h U: with one bias (SimpleRNN's), the x W operator
    # gets it, as cltrain's add_missing_biases gives it to the first of the pair; GRU's [2, 3 units]
    # bias is one row per kernel (input, recurrent).
    mapped = {v[0] for v in out.values()}
    recurrent = lambda i: variables[i].path.endswith("recurrent_kernel")  # noqa: E731
    taken = set()
    for op_index, kernel_var, name in sorted(dropped, key=lambda d: recurrent(d[1])):
        bias = [i for i in layer_of[kernel_var] if variables[i].path.endswith("bias") and i not in mapped]
        if len(bias) != 1 or len([i for i in layer_of[kernel_var] if variables[i].path.endswith("bias")]) != 1:
            continue
        rows = variables[bias[0]].shape[0] == 2 and len(variables[bias[0]].shape) == 2
        form = (3 if recurrent(kernel_var) else 2) if rows else 0
        if (bias[0], form) in taken:
            continue
        taken.add((bias[0], form))
        out["%s:%d" % (op_index, 3 if name == "TRANSPOSE_CONV" else 2)] = (bias[0], name, form)
    return out


def floats(a):
    """float32 values as the shortest decimals that read back as the same float32."""
    return [float(str(v)) for v in np.asarray(a, dtype=np.float32).ravel()]


def sampled(a, most=256):
    """A weight's values, or for a large one every stride-th (stride chosen so that at most `most`
    remain), which keeps the reference of a bigger model small."""
    v = floats(a)
    if len(v) <= most:
        return v
    stride = -(-len(v) // most)
    return {"stride": stride, "size": len(v), "values": v[::stride]}


def key_order(key):
    """A "[<subgraph>/]<op>:<slot>" key as numbers (subgraph 0 where none is given)."""
    sub, _, rest = key.rpartition("/")
    op, slot = rest.split(":")
    return int(sub or 0), int(op), int(slot)


def has_input(tfl, key):
    """Whether the file's operator has the input slot of a "[<subgraph>/]<op>:<slot>" key."""
    sub, op, slot = key_order(key)
    o = flatbuffer_utils.convert_bytearray_to_object(tfl).subgraphs[sub].operators[op]
    return slot < len(o.inputs) and o.inputs[slot] >= 0


def small(name, make):
    keras.utils.set_random_seed(1)
    model = make()
    tfl = convert(model)
    with open(os.path.join(OUT, name + ".tflite"), "wb") as f:
        f.write(tfl)
    mapping = weight_map(tfl, model)
    rng = np.random.default_rng(7)
    in_shape = (BATCH * STEPS,) + tuple(model.input_shape[1:])
    classes = model.output_shape[-1]
    if model.inputs[0].dtype == "int32":  # token ids: every id of the table, some repeated
        vocab = [la for la in model._flatten_layers() if isinstance(la, L.Embedding)][0].input_dim
        x = rng.integers(0, vocab, in_shape).astype(np.int32)
    else:
        x = rng.random(in_shape, dtype=np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, BATCH * STEPS)]
    initial = [w.numpy() for w in model.weights]
    missing = any(mapping[k][1] in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D") and k.endswith(":2") and
                  not has_input(tfl, k) for k in mapping)
    # A model whose last layer has no softmax outputs logits: Keras's from_logits=True.
    from_logits = getattr(model.layers[-1], "activation", None) is keras.activations.linear
    ref = {"model": name + ".tflite", "batch": BATCH, "steps": STEPS, "add_missing_biases": missing,
           "from_logits": from_logits,
           "x": [int(v) for v in x.ravel()] if x.dtype == np.int32 else floats(x), "x_int32": x.dtype == np.int32,
           "y": floats(y), "runs": {}}
    for opt, lr in (("sgd", 0.01), ("adam", 0.001)):
        model.set_weights(initial)
        optimizer = keras.optimizers.SGD(lr) if opt == "sgd" else keras.optimizers.Adam(lr)
        model.compile(optimizer=optimizer, loss=keras.losses.CategoricalCrossentropy(from_logits=from_logits))
        losses = [float(model.train_on_batch(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]))
                  for i in range(STEPS)]
        # One key per Keras weight (a weight the unrolled steps share is one tensor of the file).
        first = {}
        for key, (i, op, form) in sorted(mapping.items(), key=lambda kv: key_order(kv[0])):
            first.setdefault((i, form), (key, op))
        weights = {key: sampled(tflite_layout(model.weights[i].numpy(), op, form))
                   for (i, form), (key, op) in first.items()}
        ref["runs"][opt] = {"learning_rate": lr, "losses": losses, "weights": weights}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(ref, f)
    print(name, len(tfl), "bytes;", ", ".join("%s %s" % (k, v[1]) for k, v in sorted(mapping.items())))


def as_embedding_lookup(src, name):
    """src's GATHER operators rewritten as EMBEDDING_LOOKUP (ids first, then the table), as
    litert-torch writes nn.Embedding: the same model in another op, with src's reference data (its
    keys as they are: the test reads the loaded model's operators, where the table is GATHER's
    slot 0)."""
    m = flatbuffer_utils.convert_bytearray_to_object(open(os.path.join(OUT, src + ".tflite"), "rb").read())
    gather = [i for i, c in enumerate(m.operatorCodes) if max(c.builtinCode, c.deprecatedBuiltinCode) == 36]
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.EMBEDDING_LOOKUP
    code.version = 1
    m.operatorCodes.append(code)
    moved = []
    for k, op in enumerate(m.subgraphs[0].operators):
        if op.opcodeIndex in gather:
            op.opcodeIndex = len(m.operatorCodes) - 1
            op.inputs = [op.inputs[1], op.inputs[0]]
            op.builtinOptionsType, op.builtinOptions = 0, None
            moved.append(k)
    with open(os.path.join(OUT, name + ".tflite"), "wb") as f:
        f.write(flatbuffer_utils.convert_object_to_bytearray(m))
    with open(os.path.join(OUT, src + ".json")) as f:
        ref = json.load(f)
    ref["model"] = name + ".tflite"
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(ref, f)
    print(name, "from", src, ": operators", moved, "as EMBEDDING_LOOKUP")


def structure(name, model):
    tfl = convert(model)
    m = flatbuffer_utils.convert_bytearray_to_object(tfl)
    for t in m.subgraphs[0].tensors:
        buf = m.buffers[t.buffer] if t.buffer else None
        if buf is not None and buf.data is not None and t.type == schema.TensorType.FLOAT32 and len(buf.data) > 64:
            buf.data = np.zeros_like(buf.data)
    out = flatbuffer_utils.convert_object_to_bytearray(m)
    with gzip.open(os.path.join(OUT, name + ".tflite.gz"), "wb", compresslevel=9) as f:
        f.write(out)
    print(name, len(tfl), "bytes converted,", os.path.getsize(os.path.join(OUT, name + ".tflite.gz")), "gzipped structure")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]  # names of SMALL to remake alone (default: everything)
    for n, f in SMALL.items():
        if not only or n in only:
            small(n, f)
    if not only or "embedding_lookup" in only:
        as_embedding_lookup("embedding_pool", "embedding_lookup")
    if only:
        sys.exit(0)
    A = keras.applications
    structure("mobilenetv2", A.MobileNetV2(weights=None, input_shape=(96, 96, 3), classes=10))
    structure("mobilenetv3small", A.MobileNetV3Small(weights=None, input_shape=(96, 96, 3), classes=10))
    structure("efficientnetb0", A.EfficientNetB0(weights=None, input_shape=(64, 64, 3), classes=10))
