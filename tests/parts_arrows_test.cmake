# The parts' arrow table (cmake/parts.cmake) stays a layering: every part uses only parts
# listed above it, so no two parts can use each other; and leaseguard_part refuses an arrow
# the table does not allow. Run as `cmake -P`.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/parts.cmake)

set(seen "")
foreach(row IN LISTS LEASEGUARD_PART_ARROWS)
  string(REGEX REPLACE " +" ";" fields "${row}")
  list(POP_FRONT fields name)
  list(REMOVE_ITEM fields "")
  foreach(use IN LISTS fields)
    if(NOT use IN_LIST seen)
      message(FATAL_ERROR "part '${name}' uses '${use}', which is not listed above it")
    endif()
  endforeach()
  if(name IN_LIST seen)
    message(FATAL_ERROR "part '${name}' is listed twice")
  endif()
  list(APPEND seen ${name})
endforeach()

leaseguard_allowed_uses(session allowed)
if(NOT "journal" IN_LIST allowed OR "hooks" IN_LIST allowed)
  message(FATAL_ERROR "the table's row for session reads '${allowed}'")
endif()
message(STATUS "parts: ${seen}: each uses only parts above it")
