# Where libnxsim is, for the package as it sits in the source tree: nowhere
# known, so $NXSIM_LIBRARY or the system's library path. The build tree
# (build/python/nxsim) and `cmake --install` put a generated _paths.py here
# instead (python/CMakeLists.txt, cmake/install.cmake).
LIBRARY_RELATIVE = None
LIBRARY_ABSOLUTE = None
