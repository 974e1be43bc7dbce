"""``python -m runtime devices | demo | warmup``."""
from __future__ import annotations

import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "help"
    if cmd == "devices":
        import runtime as rt
        for d in rt.devices():
            print(d)
        return 0
    if cmd == "demo":
        from .demo import main as demo
        return demo(argv[1:])
    if cmd == "warmup":
        from .warmup import main as warmup
        return warmup(argv[1:])
    if cmd == "bench":
        from bench.__main__ import main as bench
        return bench(argv[1:])
    print("usage: python -m runtime {devices|demo|warmup|bench}")
    return 0 if cmd in ("help", "-h", "--help") else 2


if __name__ == "__main__":
    raise SystemExit(main())
