# The product's parts: each folder one CMake target, and the arrows between them that the
# build allows (architecture: docs/how-it-works.md, "The parts"; each folder's README.md).
#
# A part sees only its own folder's headers and those of the parts it uses, so an #include
# across an arrow nobody declared fails to compile; and a part that declares a use the table
# below does not allow fails to configure. Arrows point down the table: a part may use only
# parts listed above it.
#
#   part                 may use
set(LEASEGUARD_PART_ARROWS
  "base                 "
  "journal              base"
  "stacks               base journal"
  "reachability         base journal"
  "authority_protocol   base"
  "session              base journal stacks authority_protocol"
  "interception         "
  "scan                 base stacks reachability interception"
  "hooks                base journal stacks session interception scan"
  "report               base journal"
  "authority            base journal authority_protocol report"
  "cli                  base journal authority_protocol report authority")
# The parts of leaseguard's own programs (the CLI and the daemon): one variant, built with
# the build's sanitizer, using the checked variants of the core's parts.
set(LEASEGUARD_TOOL_PARTS report authority cli)

# leaseguard_allowed_uses(PART OUT): the parts PART may use, from the table.
function(leaseguard_allowed_uses part out)
  foreach(row IN LISTS LEASEGUARD_PART_ARROWS)
    string(REGEX REPLACE " +" ";" fields "${row}")
    list(POP_FRONT fields name)
    if(name STREQUAL part)
      list(REMOVE_ITEM fields "")
      set(${out} "${fields}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "leaseguard: part '${part}' is not in LEASEGUARD_PART_ARROWS (cmake/parts.cmake)")
endfunction()

# leaseguard_part(NAME [OBJECT] [CHECKED] SOURCES ... [USES part...] [LIBS target...]
#                 [INCLUDES dir...])
#
# Makes leaseguard_NAME: a static library (an object library with OBJECT, for code that
# must end up whole in a shared object: hooks nobody in it calls), hidden by default and
# built without sanitizers, as the code loaded into other programs needs. With CHECKED,
# also leaseguard_NAME_checked: the same sources with the sanitizer of the build, and the
# invariant checks (lg_assert.h) in Debug builds, for leaseguard's own processes and tests.
# A part of LEASEGUARD_TOOL_PARTS is only leaseguard_NAME, with the sanitizer, using the
# checked variants. USES names parts (checked against the table); LIBS, other targets (not
# checked); INCLUDES, more folders of its own the part's users see.
function(leaseguard_part name)
  cmake_parse_arguments(PART "OBJECT;CHECKED" "" "SOURCES;USES;LIBS;INCLUDES" ${ARGN})
  leaseguard_allowed_uses(${name} allowed)
  foreach(use IN LISTS PART_USES)
    if(NOT use IN_LIST allowed)
      message(FATAL_ERROR "leaseguard: part '${name}' may not use '${use}': the arrow is not in "
                          "LEASEGUARD_PART_ARROWS (cmake/parts.cmake), which allows: ${allowed}")
    endif()
  endforeach()
  set(kind STATIC)
  if(PART_OBJECT)
    set(kind OBJECT)
  endif()
  set(variants "")
  if(PART_CHECKED)
    list(APPEND variants _checked)
  endif()
  if(name IN_LIST LEASEGUARD_TOOL_PARTS)
    add_library(leaseguard_${name} ${kind} ${PART_SOURCES})
    target_include_directories(leaseguard_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${PART_INCLUDES})
    target_link_libraries(leaseguard_${name} PUBLIC ${PART_LIBS} leaseguard_sanitize PRIVATE leaseguard_warnings)
    foreach(use IN LISTS PART_USES)
      if(use IN_LIST LEASEGUARD_TOOL_PARTS)
        target_link_libraries(leaseguard_${name} PUBLIC leaseguard_${use})
      else()
        target_link_libraries(leaseguard_${name} PUBLIC leaseguard_${use}_checked)
      endif()
    endforeach()
    return()
  endif()
  foreach(variant IN ITEMS "" ${variants})
    set(target leaseguard_${name}${variant})
    add_library(${target} ${kind} ${PART_SOURCES})
    target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${PART_INCLUDES})
    target_link_libraries(${target} PUBLIC ${PART_LIBS} PRIVATE leaseguard_warnings)
    foreach(use IN LISTS PART_USES)
      target_link_libraries(${target} PUBLIC leaseguard_${use}${variant})
    endforeach()
    if(variant STREQUAL "")
      set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
    else()
      target_link_libraries(${target} PUBLIC leaseguard_sanitize)
      target_compile_definitions(${target} PUBLIC $<$<CONFIG:Debug>:LEASEGUARD_ASSERTS=1>)
    endif()
  endforeach()
endfunction()
