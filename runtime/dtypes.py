"""``runtime.dtypes``, the public path of ``runtime.core.dtypes``.  The name is bound to that
module itself, so both paths give the same objects."""
import sys

from .core import dtypes as _dtypes

sys.modules[__name__] = _dtypes
