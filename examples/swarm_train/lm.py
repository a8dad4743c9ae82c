"""lm.py: the model and the text of examples/swarm_train (README.md there says why these).

A byte-level transformer language model (4 layers, width 144, 4 heads, context 32: 1.04 M
parameters) on Python's standard library as Debian ships it (/usr/lib/python3.X/*.py, package
libpython3.X-minimal/-stdlib): text every Debian machine with python3 has; the first 4 MiB.
The last 5% of the bytes are the validation set. Quality is the validation loss in nats per byte.
"""
import glob
import os
import sys

import torch

CONTEXT, WIDTH, LAYERS, HEADS, VOCAB = 32, 144, 4, 4, 128
MLP_CONTEXT = 16


def text_bytes(limit=4 << 20):
    """The standard library's .py files, sorted by name, concatenated, as ASCII codes < 128."""
    lib = os.path.dirname(os.__file__)
    data = bytearray()
    for path in sorted(glob.glob(os.path.join(lib, "*.py"))):
        with open(path, "rb") as f:
            data += f.read()
        if len(data) >= limit:
            break
    t = torch.tensor(list(data[:limit]), dtype=torch.long)
    return torch.where(t < VOCAB, t, torch.full_like(t, ord("?")))


def split(data):
    cut = int(len(data) * 0.95)
    return data[:cut], data[cut:]


def batch(data, size, gen):
    """size random windows of CONTEXT + 1 bytes: inputs and next-byte targets."""
    starts = torch.randint(0, len(data) - CONTEXT - 1, (size,), generator=gen)
    w = torch.stack([data[s:s + CONTEXT + 1] for s in starts.tolist()])
    return w[:, :-1], w[:, 1:]


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Parameter(torch.zeros(CONTEXT, WIDTH))
        layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0,
                                                 batch_first=True, norm_first=True)
        self.body = torch.nn.TransformerEncoder(layer, LAYERS)
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, VOCAB)
        self.register_buffer("mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf")), 1))

    def forward(self, x):
        h = self.embed(x) + self.pos[:x.shape[1]]
        h = self.body(h, mask=self.mask[:x.shape[1], :x.shape[1]])
        return self.head(self.norm(h))

    def loss(self, x, y):
        return torch.nn.functional.cross_entropy(self.forward(x).reshape(-1, VOCAB), y.reshape(-1))


class MLP(torch.nn.Module):
    """A next-byte MLP over the last MLP_CONTEXT bytes (Bengio et al. 2003's shape): embeddings
    laid side by side, two hidden layers of `width`. Each sample is one prediction, not
    CONTEXT of them, so its compute per sample is about 6 x parameters flops where the
    transformer's is CONTEXT times that: the model whose gradients are large against its
    compute, the regime where the links, not the cores, set DDP's pace (docs/SWARM_TRAINING.md).
    It reads the same windows as LM and predicts only their last byte."""

    def __init__(self, width=1024, embed=64):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, embed)
        self.body = torch.nn.Sequential(
            torch.nn.Linear(MLP_CONTEXT * embed, width), torch.nn.GELU(),
            torch.nn.Linear(width, width), torch.nn.GELU(),
            torch.nn.Linear(width, VOCAB))

    def forward(self, x):
        return self.body(self.embed(x[:, -MLP_CONTEXT:]).flatten(1))

    def loss(self, x, y):
        return torch.nn.functional.cross_entropy(self.forward(x), y[:, -1])


def make(kind="transformer", width=1024):
    """The model train.py and evaluate.py build: "transformer" (LM) or "mlp" (MLP of width)."""
    return LM() if kind == "transformer" else MLP(width)


def evaluate(model, val, batches=8, size=32):
    """Mean validation loss over fixed windows (the same on every call and every peer)."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        return sum(model.loss(*batch(val, size, gen)).item() for _ in range(batches)) / batches


if __name__ == "__main__":
    import time
    torch.set_num_threads(1)
    torch.manual_seed(0)
    m = LM()
    print("parameters", sum(p.numel() for p in m.parameters()), file=sys.stderr)
    train, val = split(text_bytes())
    g = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(m.parameters(), 3e-3)
    t0 = time.time()
    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
        x, y = batch(train, 16, g)
        opt.zero_grad()
        loss = m.loss(x, y)
        loss.backward()
        opt.step()
        if s % 10 == 0:
            print(s, round(loss.item(), 3), round(time.time() - t0, 1), file=sys.stderr)
    print("val", evaluate(m, val), "s/step", (time.time() - t0) / (s + 1), file=sys.stderr)
