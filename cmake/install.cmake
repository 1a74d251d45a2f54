# Installation: the layout of the contract (bin/, lib/, lib/leaseguard/sim/, include/,
# lib/cmake/leaseguard/, lib/pkgconfig/).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS leaseguard RUNTIME DESTINATION bin)
install(TARGETS leaseguard_preload LIBRARY DESTINATION lib)
install(TARGETS leaseguard_sim_cuda leaseguard_sim_hip leaseguard_sim_nvml LIBRARY DESTINATION lib/leaseguard/sim NAMELINK_SKIP)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/leaseguard DESTINATION include)

# leaseguard::annotate needs nothing at link time (weak symbols); leaseguard::api is the C++
# RAII API (api/), with the headers of the preload's C ABI.
add_library(leaseguard_annotate INTERFACE)
target_include_directories(leaseguard_annotate INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:include>)
set_target_properties(leaseguard_annotate PROPERTIES EXPORT_NAME annotate)
add_library(leaseguard::annotate ALIAS leaseguard_annotate)
install(TARGETS leaseguard_annotate EXPORT leaseguardTargets)

install(TARGETS leaseguard_api EXPORT leaseguardTargets LIBRARY DESTINATION lib)

install(EXPORT leaseguardTargets NAMESPACE leaseguard:: DESTINATION lib/cmake/leaseguard)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/leaseguardConfig.cmake.in
  ${CMAKE_BINARY_DIR}/leaseguardConfig.cmake INSTALL_DESTINATION lib/cmake/leaseguard)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/leaseguardConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/leaseguardConfig.cmake ${CMAKE_BINARY_DIR}/leaseguardConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/leaseguardTesting.cmake DESTINATION lib/cmake/leaseguard)
configure_file(${PROJECT_SOURCE_DIR}/cmake/leaseguard.pc.in ${CMAKE_BINARY_DIR}/leaseguard.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/leaseguard.pc DESTINATION lib/pkgconfig)

# The lease authority's systemd units: the node's (a system unit) and a user's. Made when they
# are installed, not configured: their ExecStart names the prefix they are installed under
# (`cmake --install --prefix DIR` included), never the one the build was configured with.
foreach(kind IN ITEMS system user)
  set(source leaseguard.service.in)
  if(kind STREQUAL "user")
    set(source leaseguard-user.service.in)
  endif()
  install(CODE "
    configure_file(\"${PROJECT_SOURCE_DIR}/tools/authority/systemd/${source}\"
                   \"${CMAKE_BINARY_DIR}/systemd/installed/${kind}/leaseguard.service\" @ONLY)
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/${kind}\" TYPE FILE
         FILES \"${CMAKE_BINARY_DIR}/systemd/installed/${kind}/leaseguard.service\")")
endforeach()
