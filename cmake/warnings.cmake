# Warning flags go on the project's own sources only (never on third-party
# headers such as Verilator's, which are included as SYSTEM).
set(NXSIM_WARNINGS -Wall -Wextra -Werror)
function(nxsim_warnings target)
  target_compile_options(${target} PRIVATE ${NXSIM_WARNINGS})
endfunction()
