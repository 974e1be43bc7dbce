"""The bottom layer: errors, dtypes, shape arithmetic and the op record (``OpSpec``, the
catalogue and the front-end registry).

Nothing here imports any other part of ``runtime``; every other layer may import it.
"""
