"""``tg.nn``: modules, parameters, initialisers and the functional API, PyTorch-style."""
from . import functional, init
from .containers import ModuleList, Sequential
from .layers import (
    AvgPool2d,
    BCEWithLogitsLoss,
    Conv2d,
    ConvTranspose2d,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Identity,
    L1Loss,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    MSELoss,
    NLLLoss,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from .modules import Module, Parameter

__all__ = ["functional", "init", "Module", "Parameter", "Sequential", "ModuleList", "Identity",
           "Linear", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "ReLU", "LeakyReLU",
           "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Flatten", "Dropout", "MSELoss", "L1Loss",
           "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]
