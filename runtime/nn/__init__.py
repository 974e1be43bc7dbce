"""Neural-network helpers."""
