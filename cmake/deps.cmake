# Finds the four dependencies (plus cJSON for machine descriptions) and stops
# with a message naming the Debian package that provides whichever is missing.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package 'pkg-config' (apt-get install -y pkg-config)")
endif()

macro(nxsim_require_pkg prefix module debian_pkg)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "${module} not found: install the Debian package '${debian_pkg}' (apt-get install -y ${debian_pkg})")
  endif()
endmacro()

nxsim_require_pkg(SYSTEMC "systemc>=2.3.4" libsystemc-dev)
nxsim_require_pkg(CMOCKA cmocka libcmocka-dev)
nxsim_require_pkg(OPENBLAS openblas libopenblas-dev)
nxsim_require_pkg(CJSON libcjson libcjson-dev)

find_package(verilator QUIET)
if(NOT verilator_FOUND)
  message(FATAL_ERROR "Verilator not found: install the Debian package 'verilator' (apt-get install -y verilator)")
endif()

find_package(Threads REQUIRED)
find_library(MATH_LIBRARY m)
