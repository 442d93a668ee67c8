# nxsim-bench-moe (bench/moe_bench.c): blockwise_mm on Mixtral-like and
# DBRX-like prefill block sets, bf16 on one core, beside its PE and
# weight-streaming bounds and the OpenBLAS reference. Included from
# bench/CMakeLists.txt.
add_executable(nxsim-bench-moe ${CMAKE_CURRENT_LIST_DIR}/moe_bench.c)
target_link_libraries(nxsim-bench-moe PRIVATE nxsim_registry nxsim_report nxsim_sim nxsim_machine ${MATH_LIBRARY})
set_target_properties(nxsim-bench-moe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-moe)
