# Packaging of libsched (included from the top-level CMakeLists.txt after the
# lsched_shared and lsched_static targets exist):
#   - a linker version script so that libsched.so exports only lsched_* names;
#   - libsched.pc (pkg-config), relocatable through ${pcfiledir};
#   - a CMake package: find_package(libsched) gives libsched::libsched (the
#     shared library) and libsched::libsched_static.
# The headers and the libraries themselves are installed by the install()
# calls of the top-level file.
include(CMakePackageConfigHelpers)
include(CheckCSourceCompiles)

# ------------------------------------------------------------ version script
# Every public symbol carries LSCHED_API and starts with lsched_; the objects
# are built with -fvisibility=hidden. The version script is a second fence:
# a symbol that escapes visibility (an inline helper, a sanitizer-generated
# global) stays local all the same. tests/cli_install.sh checks the result.
set(LSCHED_VERSION_SCRIPT ${CMAKE_SOURCE_DIR}/cmake/libsched.map)
set(CMAKE_REQUIRED_LINK_OPTIONS "-Wl,--version-script=${LSCHED_VERSION_SCRIPT}")
check_c_source_compiles("int main(void) { return 0; }" LSCHED_HAVE_VERSION_SCRIPT)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(LSCHED_HAVE_VERSION_SCRIPT)
  target_link_options(lsched_shared PRIVATE
                      "-Wl,--version-script=${LSCHED_VERSION_SCRIPT}")
  set_property(TARGET lsched_shared APPEND PROPERTY LINK_DEPENDS
               ${LSCHED_VERSION_SCRIPT})
endif()

set_target_properties(lsched_shared PROPERTIES EXPORT_NAME libsched)
set_target_properties(lsched_static PROPERTIES EXPORT_NAME libsched_static)

# ---------------------------------------------------------------- pkg-config
# prefix = ${pcfiledir}/<up to the prefix>, so a moved tree still works.
set(LSCHED_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(LSCHED_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(LSCHED_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _lsched_up "/lsched_prefix/${LSCHED_PC_DIR}" "/lsched_prefix")
  string(REGEX REPLACE "/$" "" _lsched_up "${_lsched_up}")
  set(LSCHED_PC_PREFIX "\${pcfiledir}/${_lsched_up}")
  set(LSCHED_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(LSCHED_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(LSCHED_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_SOURCE_DIR}/libsched/libsched.pc.in
               ${CMAKE_BINARY_DIR}/libsched.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/libsched.pc DESTINATION ${LSCHED_PC_DIR})

# ------------------------------------------------------------- CMake package
set(LSCHED_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/libsched)
install(EXPORT libschedTargets NAMESPACE libsched::
        FILE libschedTargets.cmake DESTINATION ${LSCHED_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/libschedConfig.cmake.in
  ${CMAKE_BINARY_DIR}/libschedConfig.cmake INSTALL_DESTINATION ${LSCHED_CMAKE_DIR})
# SOVERSION is the major version, so compatibility is "same major".
write_basic_package_version_file(${CMAKE_BINARY_DIR}/libschedConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/libschedConfig.cmake
              ${CMAKE_BINARY_DIR}/libschedConfigVersion.cmake
        DESTINATION ${LSCHED_CMAKE_DIR})

# The header's version macros and project(VERSION) must agree: the runtime
# call returns the former, SOVERSION and the package version use the latter.
file(STRINGS ${CMAKE_SOURCE_DIR}/libsched/include/libsched/libsched.h _lsched_ver
     REGEX "^#define LSCHED_VERSION_STRING ")
string(REGEX REPLACE ".*\"([^\"]*)\".*" "\\1" _lsched_ver "${_lsched_ver}")
if(NOT _lsched_ver STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "libsched.h says version ${_lsched_ver} but "
          "CMakeLists.txt says ${PROJECT_VERSION}: update both")
endif()
