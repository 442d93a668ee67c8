# nxsim-bench-depthwise (bench/depthwise_bench.c): the depthwise conv leaves
# (#6, #9, #11) at realistic sizes against their bounds and the conv
# reference. Included from bench/CMakeLists.txt.
add_executable(nxsim-bench-depthwise ${CMAKE_CURRENT_LIST_DIR}/depthwise_bench.c)
target_link_libraries(nxsim-bench-depthwise PRIVATE nxsim_registry nxsim_report nxsim_sim nxsim_machine)
set_target_properties(nxsim-bench-depthwise PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
nxsim_warnings(nxsim-bench-depthwise)
