"""einsum (placeholder)."""
