"""Errors of traced NKI kernels: one message that starts with the kernel's
FILE:LINE (docs/parts/nki.md, "Errors").

KernelError is the user's mistake (a partition dim over 128, a tile that
does not fit, an index out of bounds); Unsupported is an NKI call or form
that nxsim does not implement, refused by name and never approximated.
The entry points (a jitted kernel's call, simulate_kernel, ...) raise them
through entry_point: the traceback a user sees holds their own frames (the
call site, the kernel's lines) and one frame of nxsim, the entry point's;
the tracer's and the launcher's frames are cut out.
"""
import functools
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


def inside_nxsim(tb):
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep)


def _user_frames(tb):
    """The traceback tb with every frame inside the nxsim package cut out
    (tb_next is writable: the kept entries are relinked in order)."""
    kept = []
    while tb is not None:
        if not inside_nxsim(tb):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def entry_point(fn):
    """Decorates a public entry point: a KernelError raised below it comes out
    with only the user's frames under this one (nested entry points: the
    outermost one's frame). Other exceptions pass untouched: they are nxsim's
    own faults and their whole traceback is the bug report."""
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KernelError as e:
            e.__context__ = None
            e.__cause__ = None
            e.__suppress_context__ = True
            raise e.with_traceback(_user_frames(e.__traceback__))
    return entry
