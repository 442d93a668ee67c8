# Python 3 for the tests that use it (the timeline checker: standard library;
# the nxsim package's tests: also NumPy). Debian's python3-numpy belongs to
# /usr/bin/python3; a python3 found earlier on PATH (a pyenv, a venv) may
# lack it, so the first candidate that imports numpy wins:
#   NXSIM_PYTHON3        a python3 (empty: none; those tests are not added)
#   NXSIM_PYTHON3_NUMPY  1 if it imports numpy
find_program(NXSIM_PYTHON3_ON_PATH NAMES python3)
set(NXSIM_PYTHON3 "")
set(NXSIM_PYTHON3_NUMPY 0)
foreach(candidate ${NXSIM_PYTHON3_ON_PATH} /usr/bin/python3)
  if(NOT EXISTS "${candidate}")
    continue()
  endif()
  if(NXSIM_PYTHON3 STREQUAL "")
    set(NXSIM_PYTHON3 "${candidate}")
  endif()
  execute_process(COMMAND "${candidate}" -c "import numpy" RESULT_VARIABLE has_numpy OUTPUT_QUIET ERROR_QUIET)
  if(has_numpy EQUAL 0)
    set(NXSIM_PYTHON3 "${candidate}")
    set(NXSIM_PYTHON3_NUMPY 1)
    break()
  endif()
endforeach()
if(NXSIM_PYTHON3 STREQUAL "")
  message(STATUS "nxsim: no python3: the timeline and Python package tests are not added (apt-get install -y python3-numpy)")
elseif(NOT NXSIM_PYTHON3_NUMPY)
  message(STATUS "nxsim: ${NXSIM_PYTHON3} has no numpy: the Python package tests will skip (apt-get install -y python3-numpy)")
endif()

# Where `cmake --install` puts the Python package (cmake/install.cmake); the
# `nxsim nki` command finds it from its own directory (cli/cmd_nki.c).
set(NXSIM_INSTALL_PYTHONDIR ${CMAKE_INSTALL_LIBDIR}/python3/dist-packages)
