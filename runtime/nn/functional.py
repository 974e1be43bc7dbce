"""rt.nn.functional."""
__all__: list = []
