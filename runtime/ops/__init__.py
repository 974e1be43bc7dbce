"""Front-end functions and the op catalogue."""
