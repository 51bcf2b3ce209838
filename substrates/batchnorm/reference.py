import torch


def reference(x, running_mean, running_var, weight, bias, *, eps):
    return torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias,
                                          training=False, eps=eps)
