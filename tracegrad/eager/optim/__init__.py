"""``tg.optim``: PyTorch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, LBFGS)
and ``tg.optim.lr_scheduler``."""
from . import lr_scheduler
from .lbfgs import LBFGS
from .optimizer import SGD, Adadelta, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "lr_scheduler"]

from .more_optimizers import ASGD, Adafactor, Adamax, NAdam, RAdam, Rprop  # noqa: E402

__all__ += ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"]
from .sparse_adam import SparseAdam  # noqa: E402

__all__ += ["SparseAdam"]
from . import swa_utils  # noqa: E402

__all__ += ["swa_utils"]
