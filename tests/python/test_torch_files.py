"""Files litert-torch wrote from PyTorch modules as users write them (tools/zoo/torch_models.py,
default options, random init; tests/torch/data with the batches and PyTorch's own losses over 5
SGD steps at lr 0.01): cltrain trains each on both backends, bit for bit the same, with PyTorch's
losses. GELU in both forms (F.gelu, approximate="tanh"); a padded max-pool (PADV2 with -inf);
nn.LSTM and nn.GRU, which litert-torch unrolls with adds of [B, 4H] to [1, B, 4H] (ranks aligned by
the broadcast-ranks pass); logits trained with nn.CrossEntropyLoss (loss 3); F.log_softmax trained
with nn.NLLLoss (loss 3 over log-probabilities); ConvTranspose2d, Upsample(bilinear), and the
shrink activations with torch.where (comparisons, SELECT_V2 of scalars, SIGN)."""
import json
import os

import numpy as np
import pytest

import cltrain

CACHE = os.environ.get("CLTRAIN_TEST_CACHE_DIR", "")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch", "data")

# The largest relative difference to PyTorch's loss allowed, and why it is not float rounding.
BOUNDS = {
    "gelu_mlp": (3e-7, None),
    "gelu_tanh_mlp": (3e-7, None),
    # Conv2d, max_pool2d(3, 2, padding=1) (PADV2 with -inf, then MAX_POOL_2D), GELU, a mean.
    "small_cnn": (3e-7, None),
    # nn.Embedding (EMBEDDING_LOOKUP between RESHAPEs that flatten the ids, folded), a mean, Linear.
    "text_mean": (3e-7, None),
    # Logits trained with nn.CrossEntropyLoss: cltrain's loss 3.
    "logits_mlp": (3e-7, None),
    # F.log_softmax (litert-torch's REDUCE_MAX ... SUB arithmetic, loaded as one LOG_SOFTMAX by the
    # log-softmax pass) trained with nn.NLLLoss: loss 3 over log-probabilities is NLLLoss.
    "log_softmax_mlp": (3e-7, None),
    # nn.ConvTranspose2d(k=4, s=2, p=1) (TRANSPOSE_CONV, SAME), nn.Upsample(bilinear)
    # (RESIZE_BILINEAR with half_pixel_centers), logits.
    "conv_decoder": (3e-7, None),
    # F.selu, F.hardshrink, F.softshrink and torch.where: comparisons into SELECT / SELECT_V2 with
    # scalar constants, and SIGN (softshrink), loaded by the compares and selects passes.
    "where_activations": (3e-7, None),
    # litert-torch folds the first time step's recurrent product with the zero initial state into
    # a constant (b_hh, or a gate's part of it, tiled over the batch) that the file holds apart from
    # b_hh; the folded-biases pass reads it as that part of b_hh, which then trains through every
    # step as PyTorch's does (without the pass: 5.6e-6 and 3.8e-5).
    "lstm": (3e-7, None),
    "gru": (3e-7, None),
    # The same layers through ONNX and onnx2tf (tools/zoo/onnx2tf_rnns.py): a WHILE loop, unrolled by
    # the while-loops pass, the input channels-last. onnx2tf adds b_ih + b_hh of a gate as one
    # constant (every LSTM gate; a GRU's r and z), which PyTorch trains as two parameters, each
    # step twice the merged one's; the file cannot tell (a Keras layer has one such bias).
    "onnx2tf_lstm": (5e-4, "b_ih + b_hh merged by onnx2tf"),
    "onnx2tf_gru": (2e-5, "b_ih + b_hh merged by onnx2tf"),
}


def losses(name, backend):
    with open(os.path.join(DATA, name + ".json")) as f:
        ref = json.load(f)
    s = cltrain.Session(os.path.join(DATA, ref["model"]), backends=[backend], batch_size=ref["batch"], cache_dir=CACHE)
    s.compile(optimizer="sgd", learning_rate=ref["learning_rate"], loss=ref.get("loss", "categorical_crossentropy"))
    got = []
    for x, y in zip(ref["x"], ref["y"]):
        x = np.array(x, dtype=np.int32 if ref["x_int"] else np.float32).reshape(ref["batch"], -1)
        got.append(s.train_step(x, np.array(y, dtype=np.float32).reshape(ref["batch"], -1)))
    return got, ref["torch_losses"]


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_trains_as_pytorch(name):
    cpu, want = losses(name, "cpu")
    ocl, _ = losses(name, "opencl")
    assert ocl == cpu, "OpenCL and CPU differ"
    diff = [abs(g - w) / abs(w) for g, w in zip(cpu, want)]
    bound, cause = BOUNDS[name]
    assert diff[0] <= 3e-7, diff
    assert max(diff) <= bound, (diff, cause)
