"""``tg.optim``: PyTorch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, LBFGS)
and ``tg.optim.lr_scheduler``."""
from . import lr_scheduler
from .lbfgs import LBFGS
from .optimizer import SGD, Adadelta, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "lr_scheduler"]
