"""tinygrad's `dtypes` namespace over lazygrad's DType values (lazygrad._C.DType)."""
from lazygrad._C import DType, dtype_names

_pybool, _pyint = bool, int


class dtypes:
    """Every element type, by PyTorch's names (float32) and tinygrad's/C's aliases (float, half):
    the attributes are set below from the C++ table that dtype= strings are parsed with."""

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


# The enum's own members, so that `dtypes.float is dtypes.float32` (a value cast from C++ is a new object).
_members = {int(m): m for m in DType.__members__.values()}
for _name, _dt in dtype_names():
    setattr(dtypes, _name, _members[int(_dt)])
dtypes.default_float, dtypes.default_int = dtypes.float32, dtypes.int32
