# nxsim-bench-data-movement (bench/data_movement_bench.c): SelectAndScatter
# and ResizeNearest on their benchmark shapes, trn1 and trn2, beside their
# DMA/HBM bounds. Included from bench/CMakeLists.txt; the smoke test runs the
# small shapes (values only, never time).
add_executable(nxsim-bench-data-movement ${CMAKE_CURRENT_LIST_DIR}/data_movement_bench.c)
target_link_libraries(nxsim-bench-data-movement PRIVATE nxsim_run nxsim_registry nxsim_sim nxsim_machine)
set_target_properties(nxsim-bench-data-movement PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-data-movement)
add_test(NAME bench_data_movement_smoke COMMAND nxsim-bench-data-movement --quick)
