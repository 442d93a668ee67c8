# nxsim-bench-tutorial (bench/tutorial_bench.c): the NKI matmul tutorial's
# four kernels at the published size on trn1 (and trn2), beside the
# published latencies. Included from bench/CMakeLists.txt; the smoke test
# runs the small shape on trn1 (values only, never time).
add_executable(nxsim-bench-tutorial ${CMAKE_CURRENT_LIST_DIR}/tutorial_bench.c ${CMAKE_CURRENT_LIST_DIR}/micro_figures.c)
target_include_directories(nxsim-bench-tutorial PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(nxsim-bench-tutorial PRIVATE nxsim_run nxsim_registry nxsim_kernels nxsim_report nxsim_sim nxsim_machine)
set_target_properties(nxsim-bench-tutorial PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-tutorial)
add_test(NAME bench_tutorial_smoke COMMAND nxsim-bench-tutorial --quick)
set_tests_properties(bench_tutorial_smoke PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
# `nxsim-bench --case tutorial|micro|nki_matmul...` runs this program.
add_dependencies(nxsim_bench nxsim-bench-tutorial)
add_test(NAME bench_tutorial_handoff COMMAND nxsim_bench --case micro)
set_tests_properties(bench_tutorial_handoff PROPERTIES PASS_REGULAR_EXPRESSION "micro act-dependent-chain \\(trn1\\): simulated")
