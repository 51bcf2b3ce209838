import torch


def reference(predictions, targets):
    return torch.nn.functional.mse_loss(predictions, targets).reshape(1)
