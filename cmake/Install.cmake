# `cmake --install build --prefix P`: what an application needs under P.
#   include/cltrain/      cltrain.h (the C API), cltrain_status.h, and the plugin ABI headers
#   lib/                  libcltrain.so (the C API) and libcltrain_opencl.so (the OpenCL backend,
#                         found next to libcltrain or from bin/cltrain at ../lib)
#   bin/cltrain           the CLI
#   lib/cmake/cltrain/    find_package(cltrain) -> cltrain::cltrain
#   lib/pkgconfig/        cltrain.pc
#   lib/python3/dist-packages/cltrain/   import cltrain (over libcltrain.so)
# `pip install .` (pyproject.toml, SKBUILD set): the runtime inside the Python package only —
# libcltrain under its SONAME alone (a wheel holds no symlinks: the .so, .so.0 and .so.0.1.0 of a
# CMake install would be three copies), the plugin beside it, the CLI; C applications use this
# install, not the wheel.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  install(PROGRAMS $<TARGET_FILE:libcltrain> DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libcltrain.so.0)
  install(TARGETS cltrain_opencl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(TARGETS cltrain RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  return()
endif()

install(TARGETS libcltrain EXPORT cltrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS cltrain_opencl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cltrain RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES
  ${CLTRAIN_INCLUDE_DIR}/cltrain/cltrain.h
  ${CLTRAIN_INCLUDE_DIR}/cltrain/cltrain_status.h
  ${CLTRAIN_INCLUDE_DIR}/cltrain/cltrain_backend.h
  ${CLTRAIN_INCLUDE_DIR}/cltrain/cltrain_ops.h
  ${CLTRAIN_INCLUDE_DIR}/cltrain/cltrain_cpu.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cltrain)

set(CLTRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cltrain)
install(EXPORT cltrainTargets NAMESPACE cltrain:: DESTINATION ${CLTRAIN_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cltrainConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cltrainConfig.cmake INSTALL_DESTINATION ${CLTRAIN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cltrainConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cltrainConfig.cmake ${CMAKE_BINARY_DIR}/cltrainConfigVersion.cmake
  DESTINATION ${CLTRAIN_CMAKE_DIR})

# pkg-config: libdir and includedir relative to the .pc file's prefix, so a moved tree still works.
file(RELATIVE_PATH CLTRAIN_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" CLTRAIN_PC_TO_PREFIX "${CLTRAIN_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/cltrain.pc.in ${CMAKE_BINARY_DIR}/cltrain.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cltrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
