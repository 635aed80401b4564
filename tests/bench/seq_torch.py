#!/usr/bin/env python3
"""PyTorch on the CPU for the sequence models of tests/keras/data (the same architectures, not
the same weights): ms per Adam training step at a batch, to put beside `cltrain bench`.

    python3 tests/bench/seq_torch.py --batch_size 8 --steps 30 [--threads 2]

OPTIONAL: PyTorch is not a dependency of cltrain (Debian's python3-torch is enough). Models, as
tests/keras/make_references.py builds them in Keras: text_lstm (Embedding(100, 32) -> LSTM(64)
-> Dense(4, softmax), sequence 32), text_gru (the same with GRU(64)), transformer (token and
position embeddings, 2 post-norm encoder layers of d_model 64, 4 heads, feed-forward 128 with
ReLU, global average pooling, Dense(4, softmax)). PyTorch runs its own fused LSTM/GRU kernels,
not the unrolled steps of the converted file. Categorical cross-entropy on the softmax output,
Adam lr 1e-3; one fixed batch of random ids and classes; prints the median ms/step of --steps
after --warmup steps, one line per model.
"""
import argparse
import statistics
import time

import torch
from torch import nn


class TextRnn(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.rnn = cell(32, 64, batch_first=True)
        self.out = nn.Linear(64, 4)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return torch.softmax(self.out(h[:, -1]), dim=-1)


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(100, 64)
        self.pos = nn.Parameter(torch.randn(32, 64) * 0.05)
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True,
                                           layer_norm_eps=1e-3)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(64, 4)

    def forward(self, ids):
        h = self.enc(self.tok(ids) + self.pos)
        return torch.softmax(self.out(h.mean(dim=1)), dim=-1)


def bench(model, batch, steps, warmup):
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (batch, 32))
    y = nn.functional.one_hot(torch.randint(0, 4, (batch,)), 4).float()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        p = model(ids).clamp(1e-7, 1 - 1e-7)
        loss = -(y * p.log()).sum(dim=1).mean()
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch_size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    for name, model in (("text_lstm", TextRnn(nn.LSTM)), ("text_gru", TextRnn(nn.GRU)),
                        ("transformer", Transformer())):
        print("%s: PyTorch %s, %d threads, batch %d: %.3f ms/step (median of %d)" %
              (name, torch.__version__, a.threads, a.batch_size, bench(model, a.batch_size, a.steps, a.warmup),
               a.steps), flush=True)


if __name__ == "__main__":
    main()
