# leaseguard_add_test(NAME name COMMAND program [args...]
#                     [OUTPUT_DIRECTORY dir] [FAIL_CODE code] [OPTIONS leaseguard-run-options...])
#
# Adds a CTest test that runs COMMAND under `leaseguard run --fail-on-leak`, with its own
# output directory (default: ${CMAKE_BINARY_DIR}/leaseguard/<name>), so each test's
# journals and reports stay apart and a test that leaks device memory fails.
# OPTIONS go to `leaseguard run` (for example --sim, --suppressions FILE, --format sarif).
function(leaseguard_add_test)
  cmake_parse_arguments(LG "" "NAME;OUTPUT_DIRECTORY;FAIL_CODE" "COMMAND;OPTIONS" ${ARGN})
  if(NOT LG_NAME OR NOT LG_COMMAND)
    message(FATAL_ERROR "leaseguard_add_test needs NAME and COMMAND")
  endif()
  if(NOT LG_OUTPUT_DIRECTORY)
    set(LG_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/leaseguard/${LG_NAME}")
  endif()
  if(NOT LG_FAIL_CODE)
    set(LG_FAIL_CODE 23)
  endif()
  add_test(NAME ${LG_NAME}
           COMMAND "${LEASEGUARD_EXECUTABLE}" run --out "${LG_OUTPUT_DIRECTORY}" --fail-on-leak=${LG_FAIL_CODE}
                   ${LG_OPTIONS} -- ${LG_COMMAND})
endfunction()
