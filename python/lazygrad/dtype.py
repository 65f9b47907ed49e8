"""tinygrad's `dtypes` namespace over lazygrad's DType values (lazygrad._C.DType)."""
from lazygrad._C import DType

_pybool, _pyint = bool, int


class dtypes:
    """Every element type, by PyTorch's names (float32) and tinygrad's/C's aliases (float, half)."""

    bool = DType.bool
    uint8 = DType.uint8
    int8 = DType.int8
    int16 = DType.int16
    uint16 = DType.uint16
    int32 = DType.int32
    uint32 = DType.uint32
    int64 = DType.int64
    uint64 = DType.uint64
    float16 = DType.float16
    bfloat16 = DType.bfloat16
    float32 = DType.float32
    float64 = DType.float64
    # aliases
    uchar = uint8
    char = int8
    short = int16
    ushort = uint16
    int = int32
    uint = uint32
    long = int64
    ulong = uint64
    half = float16
    float = float32
    double = float64
    default_float = float32
    default_int = int32

    @staticmethod
    def is_float(dt):
        return dt.is_float()

    @staticmethod
    def is_int(dt):
        return dt.is_int()

    @staticmethod
    def is_unsigned(dt):
        return dt.is_unsigned()

    @staticmethod
    def from_py(x):
        """The dtype Tensor(x) gets for a Python value (tinygrad's dtypes.from_py)."""
        if isinstance(x, (list, tuple)):
            return max((dtypes.from_py(v) for v in x), key=lambda d: d.value, default=dtypes.default_float)
        if isinstance(x, _pybool):
            return dtypes.bool
        if isinstance(x, _pyint):
            return dtypes.default_int
        return dtypes.default_float

    @staticmethod
    def all():
        """All dtypes, in promotion order."""
        return list(DType.__members__.values())
