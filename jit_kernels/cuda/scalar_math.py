"""Scalar math for the generated cuda kernels (device functions), one per float width.

On a GPU these are libdevice calls (``__nv_expf``, ``__nv_exp``, ...: the CUDA math library,
at most 1–2 ulp for the float32 transcendentals, see the CUDA C Programming Guide, appendix
"Mathematical Functions"); under the simulator they are NumPy scalar functions rounded to the
same width.  The saturating float→int conversions (``f2i32``/``f2i64``) follow the cpu set's
``cast`` semantics exactly: truncation toward zero, NaN→0, overflow saturates.
"""
import math

import numpy as np
from numba import cuda

from jit_kernels import _saturate
from jit_kernels.cuda._array import SIM

#: the rest of the elementwise math (tan, inverse trig/hyperbolic, exp2/expm1/log2/log10, atan2, hypot,
#: copysign, fmod): libdevice's ``__nv_<name>f`` / ``__nv_<name>`` on a GPU (CUDA C Programming
#: Guide: float32 tan/asin/acos/atan/sinh/cosh/asinh/acosh/atanh/expm1/log2/log10/atan2 within
#: 2-4 ulp, exp2/hypot within 2, copysign/fmod exact; float64 within 1-2 ulp), NumPy's under the
#: simulator
_MORE = ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2",
         "expm1", "log2", "log10")
_MORE2 = ("atan2", "hypot", "copysign", "fmod")
_MORE_SIM = tuple(zip(_MORE, (np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh,
                              np.arcsinh, np.arccosh, np.arctanh, np.exp2, np.expm1, np.log2,
                              np.log10)))
_MORE_SIM2 = tuple(zip(_MORE2, (np.arctan2, np.hypot, np.copysign, np.fmod)))

if SIM:
    def _mk(fn, t):
        def f(x):
            return t(fn(x))
        return f

    def _mk2(fn, t):
        def f(x, y):
            return t(fn(x, y))
        return f

    for _w, _t in (("f32", np.float32), ("f64", np.float64)):
        for _n, _fn in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin),
                        ("cos", np.cos), ("tanh", np.tanh), ("floor", np.floor),
                        ("ceil", np.ceil)):
            globals()[f"{_n}_{_w}"] = _mk(lambda x, _fn=_fn, _t=_t: _fn(_t(x)), _t)
        globals()[f"erf_{_w}"] = _mk(lambda x: math.erf(float(x)), _t)
        globals()[f"pow_{_w}"] = _mk2(lambda x, y, _t=_t: np.power(_t(x), _t(y)), _t)
        for _n, _fn in _MORE_SIM:
            globals()[f"{_n}_{_w}"] = _mk(lambda x, _fn=_fn, _t=_t: _fn(_t(x)), _t)
        for _n, _fn in _MORE_SIM2:
            globals()[f"{_n}_{_w}"] = _mk2(lambda x, y, _fn=_fn, _t=_t: _fn(_t(x), _t(y)), _t)
else:
    from numba.cuda import libdevice as _ld

    _F32 = {"exp": _ld.expf, "log": _ld.logf, "sqrt": _ld.sqrtf, "sin": _ld.sinf, "cos": _ld.cosf,
            "tanh": _ld.tanhf, "floor": _ld.floorf, "ceil": _ld.ceilf, "erf": _ld.erff}
    _F64 = {"exp": _ld.exp, "log": _ld.log, "sqrt": _ld.sqrt, "sin": _ld.sin, "cos": _ld.cos,
            "tanh": _ld.tanh, "floor": _ld.floor, "ceil": _ld.ceil, "erf": _ld.erf}

    @cuda.jit(device=True)
    def exp_f32(x):
        return _ld.expf(x)

    @cuda.jit(device=True)
    def log_f32(x):
        return _ld.logf(x)

    @cuda.jit(device=True)
    def sqrt_f32(x):
        return _ld.sqrtf(x)

    @cuda.jit(device=True)
    def sin_f32(x):
        return _ld.sinf(x)

    @cuda.jit(device=True)
    def cos_f32(x):
        return _ld.cosf(x)

    @cuda.jit(device=True)
    def tanh_f32(x):
        return _ld.tanhf(x)

    @cuda.jit(device=True)
    def floor_f32(x):
        return _ld.floorf(x)

    @cuda.jit(device=True)
    def ceil_f32(x):
        return _ld.ceilf(x)

    @cuda.jit(device=True)
    def erf_f32(x):
        return _ld.erff(x)

    @cuda.jit(device=True)
    def pow_f32(x, y):
        return _ld.powf(x, y)

    @cuda.jit(device=True)
    def exp_f64(x):
        return _ld.exp(x)

    @cuda.jit(device=True)
    def log_f64(x):
        return _ld.log(x)

    @cuda.jit(device=True)
    def sqrt_f64(x):
        return _ld.sqrt(x)

    @cuda.jit(device=True)
    def sin_f64(x):
        return _ld.sin(x)

    @cuda.jit(device=True)
    def cos_f64(x):
        return _ld.cos(x)

    @cuda.jit(device=True)
    def tanh_f64(x):
        return _ld.tanh(x)

    @cuda.jit(device=True)
    def floor_f64(x):
        return _ld.floor(x)

    @cuda.jit(device=True)
    def ceil_f64(x):
        return _ld.ceil(x)

    @cuda.jit(device=True)
    def erf_f64(x):
        return _ld.erf(x)

    @cuda.jit(device=True)
    def pow_f64(x, y):
        return _ld.pow(x, y)

    def _ld_device(ldfn, nargs):
        if nargs == 1:
            def f(x):
                return ldfn(x)
        else:
            def f(x, y):
                return ldfn(x, y)
        return cuda.jit(device=True)(f)

    for _n in _MORE + _MORE2:
        _k = 1 if _n in _MORE else 2
        globals()[f"{_n}_f32"] = _ld_device(getattr(_ld, _n + "f"), _k)
        globals()[f"{_n}_f64"] = _ld_device(getattr(_ld, _n), _k)


# the cpu set's saturating casts (``jit_kernels._saturate``), as device functions
f2i32 = cuda.jit(device=True)(_saturate.f2i32)
f2i64 = cuda.jit(device=True)(_saturate.f2i64)
f2i8 = cuda.jit(device=True)(_saturate.f2i8)
f2u8 = cuda.jit(device=True)(_saturate.f2u8)
f2i16 = cuda.jit(device=True)(_saturate.f2i16)
f2u32 = cuda.jit(device=True)(_saturate.f2u32)
f2u64 = cuda.jit(device=True)(_saturate.f2u64)
