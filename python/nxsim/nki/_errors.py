"""Errors of traced NKI kernels: one message that starts with the kernel's
FILE:LINE (docs/parts/nki.md, "Errors").

KernelError is the user's mistake (a partition dim over 128, a tile that
does not fit, an index out of bounds); Unsupported is an NKI call or form
that nxsim does not implement, refused by name and never approximated.
The entry points (nxsim.nki.jit, simulate_kernel, ...) raise them without
the frames inside nxsim.
"""
import os
import sys

from .. import InputError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class KernelError(InputError):
    """A mistake in a traced kernel: .message starts with FILE:LINE."""


class Unsupported(KernelError, NotImplementedError):
    """An NKI call or form nxsim does not implement (named in the message)."""


def user_frame():
    """The innermost frame outside the nxsim package: the kernel's line."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        f = f.f_back
    return f


def user_location():
    """(file, line, function) of the kernel code being traced."""
    f = user_frame()
    if f is None:
        return ("<unknown>", 0, "")
    return (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def _prefix(msg):
    file, line, _ = user_location()
    return "%s:%d: %s" % (file, line, msg)


def user_error(msg):
    raise KernelError(_prefix(msg))


def refuse(what):
    raise Unsupported(_prefix("%s is not supported by nxsim.nki (docs/parts/nki.md lists what is)" % what))
