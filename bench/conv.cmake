# nxsim-bench-conv (bench/conv_bench.c): the dense PE convolutions #3 and #4
# on ResNet-50 stage shapes, beside their PE/DMA bound and the reference's
# wall time. Included from bench/CMakeLists.txt.
add_executable(nxsim-bench-conv ${CMAKE_CURRENT_LIST_DIR}/conv_bench.c)
target_link_libraries(nxsim-bench-conv PRIVATE nxsim_registry nxsim_kernels nxsim_kernels_ref nxsim_report nxsim_sim
                      nxsim_machine ${MATH_LIBRARY})
set_target_properties(nxsim-bench-conv PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-conv)
