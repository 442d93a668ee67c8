# nxsim-bench-topk (bench/topk_bench.c): the topk composite's methods and
# AUTO on the benchmark cases, and the generator of the AUTO cost table
# (kernels/topk/topk_cost_table.c). Included from bench/CMakeLists.txt.
add_executable(nxsim-bench-topk ${CMAKE_CURRENT_LIST_DIR}/topk_bench.c)
target_link_libraries(nxsim-bench-topk PRIVATE nxsim_run nxsim_registry nxsim_sim nxsim_machine ${MATH_LIBRARY})
set_target_properties(nxsim-bench-topk PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-topk)
# Smoke test: a small case on every method, values only (never time).
add_test(NAME bench_topk_smoke COMMAND nxsim-bench-topk --case 4,1000,9)
