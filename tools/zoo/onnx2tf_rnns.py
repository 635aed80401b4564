#!/usr/bin/env python3
"""PyTorch nn.LSTM and nn.GRU as users write them, through ONNX and onnx2tf (default options):
onnx2tf writes each as a WHILE loop (cltrain's while-loops pass unrolls it) and takes the input
channels-last ([B, features, steps]). Two steps, two venvs (onnx2tf pins its own TensorFlow):

    build/torch-venv/bin/python tools/zoo/onnx2tf_rnns.py export OUT_DIR     # .onnx, weights, PyTorch's losses
    onnx2tf -i OUT_DIR/lstm.onnx -o OUT_DIR/lstm_tf; the same for gru          # (pip install onnx2tf, own venv)
    PYTHONPATH=build/python build/torch-venv/bin/python tools/zoo/onnx2tf_rnns.py train OUT_DIR

`export` writes NAME.onnx and NAME.json (5 batches of 4 and PyTorch's losses over 5 SGD steps, lr
0.01, softmax output and cross-entropy; x given as onnx2tf's file takes it); `train` trains the
onnx2tf files with cltrain on OpenCL and prints the largest relative difference. NAME.json beside
NAME_float32.tflite is the layout tests/python/test_torch_files.py reads.
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn

STEPS, BATCH, LR = 5, 4, 0.01


class Rnn(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn, self.fc = cell(8, 16, batch_first=True), nn.Linear(16, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return torch.softmax(self.fc(out[:, -1]), -1)


def export(out):
    for name, cell in (("lstm", nn.LSTM), ("gru", nn.GRU)):
        torch.manual_seed(0)
        m = Rnn(cell).eval()
        torch.onnx.export(m, (torch.rand(BATCH, 6, 8),), os.path.join(out, name + ".onnx"), dynamo=False,
                          opset_version=17, input_names=["x"], output_names=["y"])
        rng = np.random.default_rng(0)
        xs = rng.random((STEPS, BATCH, 6, 8), dtype=np.float32)
        ys = np.eye(3, dtype=np.float32)[rng.integers(0, 3, (STEPS, BATCH))]
        opt = torch.optim.SGD(m.parameters(), lr=LR)
        losses = []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = -(torch.from_numpy(y) * torch.log(m(torch.from_numpy(x)))).sum(1).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        ref = {"model": "onnx2tf_%s.tflite" % name, "batch": BATCH, "learning_rate": LR, "x_int": False,
               "x": [x.transpose(0, 2, 1).ravel().tolist() for x in xs],  # onnx2tf's channels-last input
               "y": [y.ravel().tolist() for y in ys], "torch_losses": losses}
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(ref, f)
        print(name, "exported; PyTorch's losses", ["%.6f" % v for v in losses])


def train(out):
    import cltrain
    for name in ("lstm", "gru"):
        with open(os.path.join(out, name + ".json")) as f:
            ref = json.load(f)
        s = cltrain.Session(os.path.join(out, name + "_tf", name + "_float32.tflite"), backends=["opencl"])
        s.compile(optimizer="sgd", learning_rate=LR, loss="categorical_crossentropy")
        ours = [s.train_step(np.array(x, np.float32).reshape(BATCH, -1), np.array(y, np.float32).reshape(BATCH, -1))
                for x, y in zip(ref["x"], ref["y"])]
        d = max(abs(a - b) / abs(b) for a, b in zip(ours, ref["torch_losses"]))
        print("%-5s loss within %.2e of PyTorch over 5 SGD steps; %s" % (name, d, "; ".join(s.rewrites[:1])))


if __name__ == "__main__":
    {"export": export, "train": train}[sys.argv[1]](sys.argv[2])
