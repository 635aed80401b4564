#!/usr/bin/env python3
"""PyTorch models as users write them (default options, random init), converted by litert-torch
with its default options, trained 5 SGD steps by PyTorch and by cltrain from the same weights on
the same batches: per model, whether the file loads and trains, and the largest relative
difference of the losses. Writes OUT_DIR/NAME.tflite and NAME.json (the batches and PyTorch's
losses; tests/torch/data holds some of them, read by tests/python/test_torch_files.py). Needs torch and litert-torch (pip install litert-torch, in a venv) and
cltrain's Python package on PYTHONPATH (build/python).

    build/torch-venv/bin/python tools/zoo/torch_models.py [OUT_DIR] [--only NAME,...]
"""
import json
import os
import sys
import traceback

import numpy as np
import torch
from torch import nn

import cltrain

torch.manual_seed(0)
BATCH, STEPS, LR = 4, 5, 0.01


class TextMean(nn.Module):  # nn.Embedding, mean over the sequence, Linear
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(50, 16), nn.Linear(16, 4)

    def forward(self, ids):
        return torch.softmax(self.fc(self.emb(ids).mean(1)), -1)


class GeluMlp(nn.Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.a, self.b = nn.Linear(20, 32), nn.Linear(32, 5)
        self.approximate = approximate

    def forward(self, x):
        return torch.softmax(self.b(nn.functional.gelu(self.a(x), approximate=self.approximate)), -1)


class Lstm(nn.Module):
    def __init__(self, cell=nn.LSTM):
        super().__init__()
        self.rnn, self.fc = cell(8, 16, batch_first=True), nn.Linear(16, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return torch.softmax(self.fc(out[:, -1]), -1)


class Encoder(nn.Module):  # nn.TransformerEncoderLayer with GELU over token embeddings
    def __init__(self, activation="gelu"):
        super().__init__()
        self.emb = nn.Embedding(40, 32)
        self.enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation=activation, batch_first=True)
        self.fc = nn.Linear(32, 4)

    def forward(self, ids):
        return torch.softmax(self.fc(self.enc(self.emb(ids)).mean(1)), -1)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = nn.functional.relu(self.c1(x))
        h = nn.functional.max_pool2d(h, 3, stride=2, padding=1)
        h = nn.functional.gelu(self.c2(h))
        return torch.softmax(self.fc(h.mean((2, 3))), -1)


class MnistExample(nn.Module):  # pytorch/examples' mnist/main.py Net: log_softmax, trained with NLLLoss
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
        self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = nn.functional.relu(self.conv1(x))
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv2(x)), 2)
        x = self.dropout1(torch.flatten(x, 1))
        x = self.dropout2(nn.functional.relu(self.fc1(x)))
        return nn.functional.log_softmax(self.fc2(x), dim=1)


class LogitsMlp(nn.Module):  # logits, trained with nn.CrossEntropyLoss
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


class LogSoftmaxMlp(LogitsMlp):  # log_softmax, trained with nn.NLLLoss
    def forward(self, x):
        return nn.functional.log_softmax(self.net(x), dim=-1)


class LogSoftmaxDim0(LogitsMlp):  # log_softmax over the batch axis: not folded (the fold's negative case)
    def forward(self, x):
        return nn.functional.log_softmax(self.net(x), dim=0)


class ConvDecoder(nn.Module):  # ConvTranspose2d (DCGAN's k=4, s=2, p=1), nn.Upsample(bilinear), logits
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1)
        self.resize = nn.Upsample(scale_factor=2, mode="bilinear")
        self.fc = nn.Linear(4 * 16 * 16, 5)

    def forward(self, x):
        h = self.resize(torch.relu(self.up(torch.relu(self.down(x)))))
        return self.fc(torch.flatten(h, 1))


class WhereActivations(nn.Module):  # nn.SELU, nn.Hardshrink, nn.Softshrink, torch.where
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(12, 16), nn.Linear(16, 16), nn.Linear(16, 5)

    def forward(self, x):
        h = nn.functional.softshrink(nn.functional.hardshrink(nn.functional.selu(self.a(x))))
        h = self.b(h)
        return self.c(torch.where(h > 0, h, 0.1 * h))


# What each model's output is, and so the loss: probabilities (softmax, cross-entropy of them),
# logits (nn.CrossEntropyLoss) or log-probabilities (nn.NLLLoss); cltrain trains the last two
# with loss 3 (categorical cross-entropy from logits: over log_softmax's output it is NLLLoss).
OUTPUTS = {"conv_decoder": "logits", "where_activations": "logits", "mnist_example": "log_probs", "logits_mlp": "logits", "log_softmax_mlp": "log_probs", "log_softmax_dim0": "log_probs"}

MODELS = {
    "text_mean": (TextMean, lambda: torch.randint(0, 50, (BATCH, 7))),
    "gelu_mlp": (GeluMlp, lambda: torch.rand(BATCH, 20)),
    "gelu_tanh_mlp": (lambda: GeluMlp("tanh"), lambda: torch.rand(BATCH, 20)),
    "lstm": (Lstm, lambda: torch.rand(BATCH, 6, 8)),
    "gru": (lambda: Lstm(nn.GRU), lambda: torch.rand(BATCH, 6, 8)),
    "encoder_gelu": (Encoder, lambda: torch.randint(0, 40, (BATCH, 6))),
    "encoder_relu": (lambda: Encoder("relu"), lambda: torch.randint(0, 40, (BATCH, 6))),
    "small_cnn": (SmallCnn, lambda: torch.rand(BATCH, 3, 12, 12)),
    "mnist_example": (MnistExample, lambda: torch.rand(BATCH, 1, 28, 28)),
    "logits_mlp": (LogitsMlp, lambda: torch.rand(BATCH, 20)),
    "conv_decoder": (ConvDecoder, lambda: torch.rand(BATCH, 3, 8, 8)),
    "where_activations": (WhereActivations, lambda: torch.randn(BATCH, 12)),
    "log_softmax_mlp": (LogSoftmaxMlp, lambda: torch.rand(BATCH, 20)),
    "log_softmax_dim0": (LogSoftmaxDim0, lambda: torch.rand(BATCH, 20)),
}


def torch_losses(model, xs, ys, output="probs"):
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    out = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        if output == "logits":
            loss = nn.functional.cross_entropy(model(x), y)  # class probabilities as targets
        elif output == "log_probs":
            loss = nn.functional.nll_loss(model(x), y.argmax(-1))
        else:
            loss = -(y * torch.log(model(x).clamp(1e-7, 1.0))).sum(-1).mean()
        loss.backward()
        opt.step()
        out.append(float(loss))
    return out


def run(name, make, example, out_dir, backend):
    import litert_torch
    torch.manual_seed(1)
    model = make().eval()
    x0 = example()
    path = os.path.join(out_dir, name + ".tflite")
    litert_torch.convert(model, (x0,)).export(path)
    rng = np.random.default_rng(3)
    xs = [example() for _ in range(STEPS)]
    classes = model(x0).shape[-1]
    ys = [torch.tensor(np.eye(classes, dtype=np.float32)[rng.integers(0, classes, BATCH)]) for _ in range(STEPS)]
    s = cltrain.Session(path, backends=[backend], batch_size=BATCH, cache_dir="")
    output = OUTPUTS.get(name, "probs")
    loss = "categorical_crossentropy" if output == "probs" else "categorical_crossentropy_from_logits"
    s.compile(optimizer="sgd", learning_rate=LR, loss=loss, add_missing_biases=True)
    got = [s.train_step(x.numpy(), y.numpy()) for x, y in zip(xs, ys)]
    # Dropout as the file has it: none (the example's Dropout layers train in eval mode here).
    want = torch_losses(model.train() if output == "probs" else model.eval(), xs, ys, output)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:  # what tests/python reads
        json.dump({"model": name + ".tflite", "batch": BATCH, "learning_rate": LR,
                   "x": [x.numpy().ravel().tolist() for x in xs], "x_int": xs[0].dtype != torch.float32,
                   "y": [y.numpy().ravel().tolist() for y in ys], "torch_losses": want, "loss": loss}, f)
    return max(abs(g - w) / abs(w) for g, w in zip(got, want)), s.rewrites


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "torch-zoo"
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    backend = os.environ.get("ZOO_BACKEND", "cpu")
    os.makedirs(out_dir, exist_ok=True)
    for name, (make, example) in MODELS.items():
        if only and name not in only:
            continue
        try:
            diff, rewrites = run(name, make, example, out_dir, backend)
            print("%-14s trains  loss within %.2e relative of PyTorch  %s" % (name, diff, "; ".join(rewrites)),
                  flush=True)
        except Exception as e:
            line = str(e).splitlines()[0] if str(e) else type(e).__name__
            print("%-14s REFUSED %s" % (name, line[:300]), flush=True)
            if os.environ.get("ZOO_TRACE"):
                traceback.print_exc()


if __name__ == "__main__":
    main()
