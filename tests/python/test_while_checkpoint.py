"""A model whose recurrent layer TensorFlow's converter wrote as a WHILE loop (tests/keras/data,
unrolled at load by the while-loops pass): six Adam steps in one session equal three, an onert
checkpoint, and three more in a new session, bit for bit (the body's weights, the biases
add_missing_biases gave the loop's operators and their Adam state all travel)."""
import os

import numpy as np

import cltrain

CACHE = os.environ.get("CLTRAIN_TEST_CACHE_DIR", "")
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "keras", "data", "while_gru.tflite")


def session():
    s = cltrain.Session(MODEL, backends=["opencl"], cache_dir=CACHE)
    s.compile(optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy", add_missing_biases=True)
    return s


def test_checkpoint_resumes_a_loop_model_bit_for_bit(tmp_path):
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 50, (6, 8, 10)).astype(np.int32)
    ys = np.eye(4, dtype=np.float32)[rng.integers(0, 4, (6, 8))]
    a = session()
    full = [a.train_step(x, y) for x, y in zip(xs, ys)]
    b = session()
    first = [b.train_step(x, y) for x, y in zip(xs[:3], ys[:3])]
    b.save_checkpoint(str(tmp_path / "loop.ckpt"))
    c = session()
    c.load_checkpoint(str(tmp_path / "loop.ckpt"))
    rest = [c.train_step(x, y) for x, y in zip(xs[3:], ys[3:])]
    assert first + rest == full
    assert full[-1] != full[0]
