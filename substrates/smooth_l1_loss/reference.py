import torch


def reference(predictions, targets, *, beta):
    return torch.nn.functional.smooth_l1_loss(predictions, targets, beta=beta).reshape(1)
