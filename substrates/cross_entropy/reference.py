import torch


def reference(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels.long()).reshape(1)
