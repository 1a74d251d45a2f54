# leaseguard_add_test(NAME name COMMAND program [args...]
#                     [OUTPUT_DIRECTORY dir] [FAIL_CODE code] [OPTIONS leaseguard-run-options...])
#
# Adds a CTest test that runs COMMAND under `leaseguard run --fail-on-leak`, with its own
# output directory (default: ${CMAKE_BINARY_DIR}/leaseguard/<name>), so each test's
# journals and reports stay apart and a test that leaks device memory fails.
# OPTIONS go to `leaseguard run` (for example --sim, --suppressions FILE, --format sarif).
# COMMAND's program may be a target's name (as add_test takes it): its file is run. SARIF
# locations are relative to ${CMAKE_SOURCE_DIR} unless OPTIONS give --source-root (a test
# runs in the build tree, where they would otherwise be absolute file:// URIs).
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
  # add_test turns a target's name into its file only as the first word of COMMAND, and here
  # leaseguard is the first word.
  list(GET LG_COMMAND 0 program)
  if(TARGET ${program})
    list(REMOVE_AT LG_COMMAND 0)
    list(PREPEND LG_COMMAND "$<TARGET_FILE:${program}>")
  endif()
  set(source_root)
  if(NOT "--source-root" IN_LIST LG_OPTIONS)
    set(source_root --source-root "${CMAKE_SOURCE_DIR}")
  endif()
  add_test(NAME ${LG_NAME}
           COMMAND "${LEASEGUARD_EXECUTABLE}" run --out "${LG_OUTPUT_DIRECTORY}" --fail-on-leak=${LG_FAIL_CODE}
                   ${source_root} ${LG_OPTIONS} -- ${LG_COMMAND})
endfunction()
