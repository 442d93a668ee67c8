"""nxsim.nki.typing: the nki.typing names kernels use in annotations
(nt.tensor[shape, dtype], nt.mutable_tensor, ...). In an annotation they
change nothing; passed as a kernel argument, nt.tensor[[250, 512],
nl.float32] stands for an input of that shape and dtype, as the public
tools take it for nki.benchmark (prof-kernel-benchmark style): the run
feeds it deterministic pseudo-random values (docs/parts/nki.md)."""


class TensorType:
    """nt.tensor[shape, dtype]: an input's shape and dtype, no values."""

    def __init__(self, kind, shape, dtype):
        self.kind, self.shape, self.dtype = kind, shape, dtype

    def __repr__(self):
        return "nki.typing.%s[%s, %s]" % (self.kind, list(self.shape), self.dtype)


class _Subscriptable:
    def __init__(self, name):
        self.name = name

    def __getitem__(self, item):
        # tensor[shape, dtype] (shape a list or tuple of ints): a typed argument;
        # anything else (annotations such as tensor[sz_p, sz_h, sz_w]) is the
        # bare name, as before
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], (list, tuple)) and \
                all(isinstance(n, int) for n in item[0]):
            return TensorType(self.name, tuple(item[0]), item[1])
        return self

    def __repr__(self):
        return "nki.typing.%s" % self.name


tensor = _Subscriptable("tensor")
mutable_tensor = _Subscriptable("mutable_tensor")
scalar = _Subscriptable("scalar")
