"""The in-tree PEP 517 build backend of nxsim (pyproject.toml; docs/parts/install.md).

`pip install .` and `pip wheel .` run it with build isolation and no
build requirements, so it works offline with nothing but the Debian
packages scripts/setup.sh installs (CMake, a C/C++ toolchain, SystemC ...):
it configures and builds libnxsim and the `nxsim` command with CMake, then
packs one wheel holding the Python package (python/nxsim), the library
inside it (nxsim/_libs/libnxsim.so.MAJOR, found through _paths.py) and the
command (installed on the environment's PATH).

The CMake build directory is $NXSIM_BUILD_DIR if set (an existing build
tree is reused: only the two targets are brought up to date), else
build/pip under the source tree (kept, so a second install is
incremental). $NXSIM_BUILD_JOBS sets the parallel jobs (default: the CPU
count). The wheel is tagged py3-none-<platform>: the package is pure
Python over ctypes, the library is native to this platform and needs the
same shared libraries at run time (SystemC, OpenBLAS, cJSON).
"""
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NAME = "nxsim"
SUMMARY = "Kernel execution environment for a simulated NeuronCore-like accelerator (C library, CLI, Python)"


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*nxsim\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("nxsim build: no project(nxsim VERSION ...) in CMakeLists.txt")
    return m.group(1)


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-%s" % plat


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: >=3.8\n"
            "License: see the source tree\n\n"
            "nxsim's Python package (NumPy arrays in and out; numpy comes from the system, e.g. Debian's "
            "python3-numpy, or pip) with libnxsim and the nxsim command. See docs/parts/nki.md and "
            "docs/parts/python.md.\n" % (NAME, version, SUMMARY))


def _run(cmd):
    print("nxsim build: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _cmake_build():
    build = os.environ.get("NXSIM_BUILD_DIR") or os.path.join(ROOT, "build", "pip")
    build = os.path.abspath(build)
    jobs = os.environ.get("NXSIM_BUILD_JOBS") or str(os.cpu_count() or 1)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    _run(["cmake", "--build", build, "--target", "nxsim_lib", "nxsim", "-j", jobs])
    lib = os.path.join(build, "libnxsim.so.%s" % _version().split(".")[0])
    exe = os.path.join(build, "nxsim")
    for path in (lib, exe):
        if not os.path.exists(path):
            raise RuntimeError("nxsim build: %s was not built" % path)
    return lib, exe


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (mode | 0o100000) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, record_name):
        self.records.append("%s,," % record_name)
        info = zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        self.zip.writestr(info, "\n".join(self.records) + "\n")
        self.zip.close()


def _package_files():
    pkg = os.path.join(ROOT, "python", "nxsim")
    for base, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py") and not (base == pkg and f == "_paths.py"):
                full = os.path.join(base, f)
                yield full, os.path.relpath(full, os.path.join(ROOT, "python")).replace(os.sep, "/")


def _dist_info(version):
    return "%s-%s.dist-info" % (NAME, version)


# ---- PEP 517 hooks ----
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    d = os.path.join(metadata_directory, _dist_info(version))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(_metadata(version))
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: nxsim_pep517\nRoot-Is-Purelib: false\nTag: %s\n" % _tag())
    return os.path.basename(d)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    lib, exe = _cmake_build()
    major = version.split(".")[0]
    name = "%s-%s-%s.whl" % (NAME, version, _tag())
    w = _Wheel(os.path.join(wheel_directory, name))
    for full, arc in _package_files():
        with open(full, "rb") as f:
            w.add(arc, f.read())
    w.add("nxsim/_paths.py", ("# Written by the pip build (python/build_backend/nxsim_pep517.py): the library\n"
                              "# packed beside this package.\nLIBRARY_RELATIVE = \"_libs/libnxsim.so.%s\"\n"
                              "LIBRARY_ABSOLUTE = None\n" % major).encode())
    with open(lib, "rb") as f:
        w.add("nxsim/_libs/libnxsim.so.%s" % major, f.read(), 0o755)
    with open(exe, "rb") as f:
        w.add("%s-%s.data/scripts/nxsim" % (NAME, version), f.read(), 0o755)
    di = _dist_info(version)
    w.add(di + "/METADATA", _metadata(version).encode())
    w.add(di + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: nxsim_pep517\nRoot-Is-Purelib: false\nTag: %s\n"
                          % _tag()).encode())
    w.close(di + "/RECORD")
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The tracked files of the source tree (git ls-files), as NAME-VERSION.tar.gz."""
    version = _version()
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, stdout=subprocess.PIPE).stdout
    files = [f for f in out.decode().split("\0") if f]
    name = "%s-%s" % (NAME, version)
    path = os.path.join(sdist_directory, name + ".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for f in files:
            full = os.path.join(ROOT, f)
            if os.path.isfile(full):
                tar.add(full, arcname="%s/%s" % (name, f), recursive=False)
        pkg = io.BytesIO(_metadata(version).encode())
        info = tarfile.TarInfo("%s/PKG-INFO" % name)
        info.size = len(pkg.getvalue())
        tar.addfile(info, pkg)
    return os.path.basename(path)
