"""``runtime.errors``, the public path of ``runtime.core.errors`` (the exception classes and
their exact messages).  The name is bound to that module itself, so both paths give the same
objects."""
import sys

from .core import errors as _errors

sys.modules[__name__] = _errors
