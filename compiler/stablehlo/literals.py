"""Numbers as MLIR prints them: float attributes and `dense<...>` literals.

    1.0 -> 1.000000e+00     0.7978845608 -> 0.797884583     -inf (f32) -> 0xFF800000
    DenseElements((1.0, 2.0), (2,)) -> dense<[1.000000e+00, 2.000000e+00]>

`format_float` is MLIR's `printFloatValue` (LLVM's `APFloat::toString`), so the exporter writes
the digits MLIR would for the same value.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from shardc.ir.attributes import DenseElements
from shardc.ir.types import COMPLEX_PARTS, is_float
from shardc.stablehlo.attributes import round_to_dtype

_SEMANTICS_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
_BIT_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _apfloat_to_string(x: float, semantic_precision: int, format_precision: int,
                       max_padding: int, truncate_zero: bool) -> str:
    """LLVM's `APFloat::toString` for a finite value (same digits, padding and exponent)."""
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        if max_padding:
            return sign + "0"
        if truncate_zero:
            return sign + "0.0E+0"
        return sign + "0.0" + "0" * max(format_precision - 1, 0) + "e+00"
    num, den = abs(x).as_integer_ratio()
    exp = -(den.bit_length() - 1)
    sig = num
    if not format_precision:
        format_precision = 2 + semantic_precision * 59 // 196
    trailing = (sig & -sig).bit_length() - 1
    exp += trailing
    sig >>= trailing
    if exp > 0:
        sig <<= exp
        exp = 0
    elif exp < 0:
        sig *= 5 ** (-exp)
    # Drop digits the precision cannot show (truncating, as LLVM does before rounding).
    bits = sig.bit_length()
    bits_required = (format_precision * 196 + 58) // 59
    if bits > bits_required:
        tens = (bits - bits_required) * 59 // 196
        if tens:
            exp += tens
            sig //= 10**tens
    digits = str(sig)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    buf = list(reversed(stripped))  # least significant digit first
    n = len(buf)
    if n > format_precision:
        first = n - format_precision
        if buf[first - 1] < "5":
            while first < n and buf[first] == "0":
                first += 1
            exp += first
            buf = buf[first:]
        else:
            for i in range(first, n):
                if buf[i] == "9":
                    first += 1
                else:
                    buf[i] = chr(ord(buf[i]) + 1)
                    break
            exp += first
            buf = ["1"] if first == n else buf[first:]
    n = len(buf)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > format_precision
    else:
        msd = exp + n - 1
        scientific = False if msd >= 0 else -msd > max_padding
    if scientific:
        exp += n - 1
        out = sign + buf[-1] + "."
        if n == 1 and truncate_zero:
            out += "0"
        else:
            out += "".join(reversed(buf[:-1]))
        if not truncate_zero and format_precision > n - 1:
            out += "0" * (format_precision - n + 1)
        out += "E" if truncate_zero else "e"
        out += "+" if exp >= 0 else "-"
        exp_digits = str(abs(exp))
        if not truncate_zero and len(exp_digits) < 2:
            exp_digits = "0" + exp_digits
        return out + exp_digits
    if exp >= 0:
        return sign + "".join(reversed(buf)) + "0" * exp
    whole = exp + n
    text = "".join(reversed(buf))
    if whole > 0:
        return sign + text[:whole] + "." + text[whole:]
    return sign + "0." + "0" * (-whole) + text


def float_bits(x: float, dtype: str) -> int:
    if dtype == "f64":
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    if dtype == "f16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    bits32 = struct.unpack("<I", struct.pack("<f", x))[0]
    if math.isnan(x):
        bits32 = 0x7FC00000 | (bits32 & 0x80000000)
    return bits32 >> 16 if dtype == "bf16" else bits32


def format_float(x: float, dtype: str) -> str:
    """MLIR's `printFloatValue`: `1.000000e+00`, `0.797884583`, `9.99999974E-6`, `0xFF800000`."""
    precision = _SEMANTICS_PRECISION[dtype]
    if math.isfinite(x):
        text = _apfloat_to_string(x, precision, 6, 0, False)
        back = round_to_dtype(float(text), dtype)
        if back == x and math.copysign(1.0, back) == math.copysign(1.0, x):
            return text
        text = _apfloat_to_string(x, precision, 0, 3, True)
        if "." in text:
            return text
    width = _BIT_WIDTH[dtype] // 4
    return "0x" + format(float_bits(x, dtype), f"0{width}X")


def _scalar(v: Any, dtype: str) -> str:
    if dtype.startswith("complex<"):
        part = COMPLEX_PARTS[dtype]
        v = complex(v)
        return f"({_scalar(v.real, part)},{_scalar(v.imag, part)})"
    if dtype == "i1":
        return "true" if v else "false"
    if is_float(dtype):
        return format_float(float(v), dtype)
    return str(int(v))


def format_dense(value: DenseElements, dtype: str) -> str:
    if value.hex is not None:
        return f'dense<"{value.hex}">'
    if value.bits is not None:
        return f"dense<{value.bits}>"
    if value.is_splat:
        return f"dense<{_scalar(value.values[0], dtype)}>"
    if not value.shape:
        return "dense<>"

    def nest(values: tuple, shape: tuple[int, ...]) -> str:
        if len(shape) == 1:
            return "[" + ", ".join(_scalar(v, dtype) for v in values) + "]"
        step = len(values) // shape[0] if shape[0] else 0
        return "[" + ", ".join(
            nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])
        ) + "]"

    return f"dense<{nest(value.values, value.shape)}>"


def int_nest(text: str) -> Any:
    """`[[0, 1], [2, 3]]` (or `5`) -> nested lists of ints; a `ValueError` for anything else
    (device-id lists in replica groups are read with it)."""
    import json

    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"expected integers in nested lists, got '{text[:40]}'") from None

    def check(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                check(x)
        elif not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"expected integers in nested lists, got '{text[:40]}'")

    check(value)
    return value
