"""Loading libnxsim and declaring its C API (include/nxsim/nxsim.h) for ctypes.

Where the library is, first found wins:
  1. $NXSIM_LIBRARY, if set (a path to libnxsim.so.0);
  2. the path _paths.py records (the build tree's package points at the
     library it was built with; the installed one at lib/ relative to it);
  3. the system's library path (ctypes.util.find_library("nxsim")).
"""
import ctypes
import ctypes.util
import os

from . import _paths

NX_MESSAGE_MAX = 512
ENGINE_COUNT = 5


class Message(ctypes.Structure):
    _fields_ = [("text", ctypes.c_char * NX_MESSAGE_MAX)]


class Config(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("backend", ctypes.c_int),
        ("pe_rtl", ctypes.c_int),
        ("race_check", ctypes.c_int),
        ("check", ctypes.c_int),
        ("keep_log", ctypes.c_int),
        ("progress", ctypes.c_int),
        ("grid", ctypes.c_uint32),
        ("seed", ctypes.c_uint64),
    ]


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("role", ctypes.c_char_p),
        ("ndims", ctypes.c_uint32),
        ("shape", ctypes.c_uint64 * 6),
        ("bytes", ctypes.c_uint64),
    ]


class EngineStats(ctypes.Structure):
    _fields_ = [
        ("instructions", ctypes.c_uint64),
        ("busy_ns", ctypes.c_double),
        ("stall_ns", ctypes.c_double),
        ("busy_pct", ctypes.c_double),
        ("clock_ghz", ctypes.c_double),
    ]


class CheckInfo(ctypes.Structure):
    _fields_ = [
        ("max_abs_error", ctypes.c_double),
        ("max_rel_error", ctypes.c_double),
        ("mismatches", ctypes.c_uint64),
        ("first_mismatch", ctypes.c_uint64),
        ("tolerance_abs", ctypes.c_double),
        ("tolerance_rel", ctypes.c_double),
        ("tolerance", ctypes.c_char * 64),
        ("reference", ctypes.c_char * 64),
    ]


def _candidates():
    env = os.environ.get("NXSIM_LIBRARY")
    if env:
        yield env
        return
    if _paths.LIBRARY_ABSOLUTE:
        yield _paths.LIBRARY_ABSOLUTE
    if _paths.LIBRARY_RELATIVE:
        yield os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), _paths.LIBRARY_RELATIVE))
    found = ctypes.util.find_library("nxsim")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        tried.append(path)
        if os.path.sep in path and not os.path.exists(path):
            continue
        return ctypes.CDLL(path), path
    raise ImportError("nxsim: libnxsim.so not found (tried %s); set NXSIM_LIBRARY to its path"
                      % (", ".join(tried) or "nothing"))


lib, path = _load()

P = ctypes.c_void_p
S = ctypes.c_char_p
U32, U64, I, D = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int, ctypes.c_double
MSG = ctypes.POINTER(Message)
PP = ctypes.POINTER(ctypes.c_void_p)

# name: (restype, argtypes). Functions returning malloc'd strings return
# c_void_p so that the pointer can be given back to nx_free.
_API = {
    "nx_version": (S, []),
    "nx_free": (None, [P]),
    "nx_session_open": (I, [S, PP, MSG]),
    "nx_session_close": (None, [P]),
    "nx_session_machine": (S, [P]),
    "nx_machine_presets_list": (ctypes.POINTER(S), []),
    "nx_call_new": (I, [S, PP, MSG]),
    "nx_call_free": (None, [P]),
    "nx_call_add_operand": (I, [P, S, U32, ctypes.POINTER(U64), P, MSG]),
    "nx_call_set_attr": (I, [P, S, S, MSG]),
    "nx_config_init": (None, [ctypes.POINTER(Config)]),
    "nx_session_run": (I, [P, P, ctypes.POINTER(Config), PP, MSG]),
    "nx_prog_load": (I, [S, PP, MSG]),
    "nx_prog_free": (None, [P]),
    "nx_prog_machine": (S, [P]),
    "nx_prog_tensor_count": (U32, [P]),
    "nx_prog_tensor": (I, [P, U32, ctypes.POINTER(TensorInfo)]),
    "nx_session_exec": (I, [P, P, U32, ctypes.POINTER(S), ctypes.POINTER(P), ctypes.POINTER(U64),
                            ctypes.POINTER(Config), PP, MSG]),
    "nx_result_free": (None, [P]),
    "nx_result_count": (U32, [P]),
    "nx_result_tensor": (I, [P, U32, ctypes.POINTER(TensorInfo)]),
    "nx_result_data": (P, [P, U32]),
    "nx_result_kernel": (S, [P]),
    "nx_result_cores": (U32, [P]),
    "nx_result_new_traces": (U64, [P]),
    "nx_result_cache_hits": (U64, [P]),
    "nx_result_op_json": (P, [P]),
    "nx_result_on_model": (I, [P]),
    "nx_result_total_ns": (D, [P]),
    "nx_result_instructions": (U64, [P]),
    "nx_engine_label": (S, [U32]),
    "nx_result_engine": (I, [P, U32, U32, ctypes.POINTER(EngineStats)]),
    "nx_result_summary": (P, [P, I]),
    "nx_result_by_source": (P, [P, I]),
    "nx_result_write_trace": (I, [P, S, MSG]),
    "nx_result_write_timeline": (I, [P, S, MSG]),
    "nx_result_checked": (I, [P]),
    "nx_result_check_failures": (U32, [P]),
    "nx_result_check": (I, [P, U32, ctypes.POINTER(CheckInfo)]),
    "nx_result_race_checked": (I, [P]),
    "nx_registry_json": (P, [I]),
    "nx_kernels_json": (P, []),
    "nx_dtype_bytes": (ctypes.c_size_t, [S]),
    "nx_convert": (I, [S, P, S, P, U64, MSG]),
}

for _name, (_res, _args) in _API.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def take_string(ptr):
    """A malloc'd C string the library returned, as str (None for NULL), freed."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.nx_free(ptr)
