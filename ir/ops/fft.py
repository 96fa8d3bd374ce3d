"""`fft`: fast Fourier transforms over the trailing dims (StableHLO semantics).

%0 = fft %x {fft_type = FFT, fft_length = [32, 64]} : tensor<8x32x64xcomplex<f32>>
%1 = fft %r {fft_type = RFFT, fft_length = [64]} : tensor<8x32x33xcomplex<f32>>

`fft_length` names the sizes of the transformed (trailing) dims. FFT/IFFT map complex to complex
of the same shape; RFFT takes reals and keeps `n // 2 + 1` entries of the last dim; IRFFT is its
inverse (complex in, `fft_length[-1]` reals out).
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, register, req
from shardc.ir.types import COMPLEX_PARTS, TensorType, is_complex

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
_REAL_OF = COMPLEX_PARTS
_COMPLEX_OF = {v: k for k, v in _REAL_OF.items()}


def _infer_fft(op: Operation) -> list[TensorType]:
    x = op.operand(0).type
    kind = attr(op, "fft_type").word
    length = attr(op, "fft_length")
    if not 1 <= len(length) <= min(3, x.rank):
        raise op_error(op, f"fft_length {list(length)} must name 1 to 3 trailing dims")
    trailing = list(x.shape[x.rank - len(length):])
    shape = list(x.shape)
    if kind in ("FFT", "IFFT"):
        if not is_complex(x.dtype):
            raise op_error(op, f"{kind} takes a complex operand, got {x.dtype}")
        dtype = x.dtype
        want = list(length)
    elif kind == "RFFT":
        if x.dtype not in _COMPLEX_OF:
            raise op_error(op, f"RFFT takes f32 or f64, got {x.dtype}")
        dtype = _COMPLEX_OF[x.dtype]
        want = list(length)
        shape[-1] = length[-1] // 2 + 1
    else:
        if x.dtype not in _REAL_OF:
            raise op_error(op, f"IRFFT takes a complex operand, got {x.dtype}")
        dtype = _REAL_OF[x.dtype]
        want = list(length[:-1]) + [length[-1] // 2 + 1]
        shape[-1] = length[-1]
    if trailing != want:
        raise op_error(op, f"the trailing dims {trailing} do not fit fft_length {list(length)}")
    return [TensorType(tuple(shape), dtype)]


register(
    OpDef(
        "fft",
        1,
        1,
        {"fft_type": req("keyword", *FFT_TYPES), "fft_length": req("ints")},
        _infer_fft,
        summary="FFT, IFFT, RFFT or IRFFT over the trailing dims",
    )
)
