#!/usr/bin/env python3
"""Remakes the small converted files that tests/passes reads beside the Keras references (no
Keras losses needed: the tests check what the passes make of them). Run from the repository root:

    PYTHONPATH=build/python build/keras-venv/bin/python tests/keras/make_pass_files.py

- simple_rnn_zero_bias.tflite, simple_rnn_bias.tflite: Embedding(20, 4) -> SimpleRNN(4) ->
  Dense(3), unrolled as cltrain.convert.from_keras unrolls it, biases zero (which the converter
  drops) or random (which it keeps, fused into the x_t W operators): the missing-biases pass.
- gru_reset_before_zero_bias.tflite: Embedding(20, 4) -> GRU(4, reset_after=False) -> Dense(3),
  unrolled, biases zero: x_t W split into the three gates, h U_zr sliced into two, (r h) U_h
  summed with the third part; one layer, one bias (on x_t W).
- stacked_lstm_forget_bias.tflite: Embedding(20, 3) -> LSTM(2, return_sequences=True) -> LSTM(2)
  -> Dense(3), sequence length 2, unrolled: both LSTMs start with unit_forget_bias's [0, 1, 0, 0]
  bias, which the converter keeps once, added after each step's x_t W + h U (untie-constants).
- while_data_steps.tflite: a tf.function whose tf.while_loop steps as many times as its input
  says (a trip count computed from the data): the while-loops pass refuses it in one line.
- dropout_lstm.tflite: Embedding(20, 4) -> LSTM(4, dropout=0.2, recurrent_dropout=0.2) -> Dense(3),
  3 steps, batch 2 (a WHILE loop): Keras's SeedGenerator state kept by the converter (CALL_ONCE,
  VAR_HANDLE, READ_VARIABLE, an INT64 ADD and ASSIGN_VARIABLE per draw): the state-updates pass.
- stack_axis0.tflite: keras.ops.stack of two Dense outputs on axis 0, summed over it: a PACK that
  would move the batch off the first axis (the packs pass leaves it, named as unsupported).
"""
import contextlib
import io

import keras
import tensorflow as tf

from cltrain.convert import _keras_unrolled

L = keras.layers
DATA = "tests/keras/data/"


def convert(model):
    with contextlib.redirect_stdout(io.StringIO()):
        return bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())


def main():
    for name, kw in (("simple_rnn_zero_bias", {}),
                     ("simple_rnn_bias", {"bias_initializer": keras.initializers.RandomNormal(stddev=0.05)})):
        keras.utils.set_random_seed(5)
        x = keras.Input((5,), dtype="int32")
        h = L.SimpleRNN(4, **kw)(L.Embedding(20, 4)(x))
        model, _ = _keras_unrolled(keras.Model(x, L.Dense(3, activation="softmax", **kw)(h)))
        open(DATA + name + ".tflite", "wb").write(convert(model))
    keras.utils.set_random_seed(5)
    x = keras.Input((3,), dtype="int32")
    h = L.GRU(4, reset_after=False)(L.Embedding(20, 4)(x))
    model, _ = _keras_unrolled(keras.Model(x, L.Dense(3, activation="softmax")(h)))
    open(DATA + "gru_reset_before_zero_bias.tflite", "wb").write(convert(model))
    keras.utils.set_random_seed(5)
    x = keras.Input((2,), dtype="int32")
    h = L.LSTM(2)(L.LSTM(2, return_sequences=True)(L.Embedding(20, 3)(x)))
    model, _ = _keras_unrolled(keras.Model(x, L.Dense(3, activation="softmax")(h)))
    open(DATA + "stacked_lstm_forget_bias.tflite", "wb").write(convert(model))
    keras.utils.set_random_seed(5)
    x = keras.Input((3,), dtype="int32", batch_size=2)
    h = L.LSTM(4, dropout=0.2, recurrent_dropout=0.2)(L.Embedding(20, 4)(x))
    open(DATA + "dropout_lstm.tflite", "wb").write(convert(keras.Model(x, L.Dense(3, activation="softmax")(h))))

    @tf.function(input_signature=[tf.TensorSpec([2, 4], tf.float32)])
    def data_steps(x):
        n = tf.cast(tf.reduce_sum(x), tf.int32)  # how many steps: from the data
        return tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 0.5 + 1.0), (tf.constant(0), x))[1]

    with contextlib.redirect_stdout(io.StringIO()):
        conv = tf.lite.TFLiteConverter.from_concrete_functions([data_steps.get_concrete_function()], data_steps)
        open(DATA + "while_data_steps.tflite", "wb").write(conv.convert())
    keras.utils.set_random_seed(0)
    x = keras.Input((4,))
    a, b = L.Dense(3)(x), L.Dense(3)(x)
    stacked = keras.ops.stack([a, b], axis=0)  # [2, B, 3]
    open(DATA + "stack_axis0.tflite", "wb").write(convert(keras.Model(x, L.Dense(2)(keras.ops.sum(stacked, axis=0)))))


if __name__ == "__main__":
    main()
