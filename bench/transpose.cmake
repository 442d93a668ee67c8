# nxsim-bench-transpose (bench/transpose_bench.c): the two grid transposes at
# 4096x4096, fp32 and bf16, on 1 core and on VNC(2). Included from
# bench/CMakeLists.txt.
add_executable(nxsim-bench-transpose ${CMAKE_CURRENT_LIST_DIR}/transpose_bench.c)
target_link_libraries(nxsim-bench-transpose PRIVATE nxsim_run nxsim_registry nxsim_sim nxsim_machine)
set_target_properties(nxsim-bench-transpose PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-transpose)
