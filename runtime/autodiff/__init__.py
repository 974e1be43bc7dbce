"""(being written) see the package modules."""
__all__: list = []
