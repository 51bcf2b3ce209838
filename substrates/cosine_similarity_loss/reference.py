import torch


def reference(a, b, *, eps):
    cos = torch.nn.functional.cosine_similarity(a, b, dim=1, eps=eps)
    return (1.0 - cos).mean().reshape(1)
