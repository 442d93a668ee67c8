"""nxsim.nki.typing: the nki.typing names kernels use in annotations
(nt.tensor[shape, dtype], nt.mutable_tensor, ...). Annotations do not
change what a traced kernel does, so these only need to exist."""


class _Subscriptable:
    def __init__(self, name):
        self.name = name

    def __getitem__(self, item):
        return self

    def __repr__(self):
        return "nki.typing.%s" % self.name


tensor = _Subscriptable("tensor")
mutable_tensor = _Subscriptable("mutable_tensor")
scalar = _Subscriptable("scalar")
