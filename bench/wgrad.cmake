# nxsim-bench-wgrad (bench/wgrad_bench.c): the weight-gradient convolutions
# #5, #7, #8 at full size (ResNet-50 conv1, a MobileNet-like depthwise
# layer) beside their PE/DMA bound and the reference's wall time. Included
# from bench/CMakeLists.txt.
add_executable(nxsim-bench-wgrad ${CMAKE_CURRENT_LIST_DIR}/wgrad_bench.c)
target_link_libraries(nxsim-bench-wgrad PRIVATE nxsim_run nxsim_registry nxsim_kernels nxsim_kernels_ref nxsim_report
                      nxsim_sim nxsim_machine ${MATH_LIBRARY})
set_target_properties(nxsim-bench-wgrad PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-wgrad)
