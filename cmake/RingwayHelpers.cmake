# SPDX-License-Identifier: Apache-2.0
# Helpers that keep the per-folder CMakeLists.txt files to a few lines.
include(CheckCCompilerFlag)

# rw_check_tristate(VAR): VAR must be AUTO, ON or OFF.
function(rw_check_tristate var)
  string(TOUPPER "${${var}}" v)
  if(NOT v MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${var}='${${var}}': use AUTO, ON or OFF")
  endif()
  set(${var} ${v} PARENT_SCOPE)
endfunction()

# rw_find_optional(NAME OPTION_VAR DESCRIPTION PKG module)
# Sets RW_HAVE_<NAME> and, when found, an imported target rw::<name>.
function(rw_find_optional name opt desc)
  cmake_parse_arguments(F "" "PKG" "" ${ARGN})
  set(found OFF)
  if(NOT ${opt} STREQUAL "OFF")
    pkg_check_modules(RWPKG_${name} QUIET IMPORTED_TARGET ${F_PKG})
    if(RWPKG_${name}_FOUND)
      set(found ON)
      string(TOLOWER ${name} lname)
      add_library(rw::${lname} INTERFACE IMPORTED GLOBAL)
      target_link_libraries(rw::${lname} INTERFACE PkgConfig::RWPKG_${name})
    elseif(${opt} STREQUAL "ON")
      message(FATAL_ERROR "${opt}=ON but ${desc} was not found")
    endif()
  endif()
  set(RW_HAVE_${name} ${found} PARENT_SCOPE)
endfunction()

# rw_add_c_flags_if_supported(flags...): add each flag the C compiler accepts.
function(rw_add_c_flags_if_supported)
  foreach(flag ${ARGN})
    string(MAKE_C_IDENTIFIER "RW_CFLAG${flag}" var)
    check_c_compiler_flag(${flag} ${var})
    if(${var})
      add_compile_options($<$<COMPILE_LANGUAGE:C>:${flag}>)
    endif()
  endforeach()
endfunction()

# rw_add_sources(files...): add this folder's files to the internal library.
function(rw_add_sources)
  target_sources(rw_core PRIVATE ${ARGN})
endfunction()

# rw_add_test(NAME SOURCES files... [TIMEOUT s] [LIBS libs...] [ARGS args...]
#             [ENV VAR=value...] [LABELS labels...])
# One cmocka executable, registered with ctest with a timeout (default 60 s).
function(rw_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;ARGS;ENV;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE rw_testsupport rw_core ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# rw_check_fuzz(): RINGWAY_FUZZ=ON needs clang with libFuzzer, the tests
# (the fuzz targets live beside them) and no other sanitizer.
function(rw_check_fuzz)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "RINGWAY_FUZZ=ON needs clang (CC=clang or -DCMAKE_C_COMPILER=clang; "
                        "make fuzz does this)")
  endif()
  if(NOT RINGWAY_BUILD_TESTS)
    message(FATAL_ERROR "RINGWAY_FUZZ=ON needs RINGWAY_BUILD_TESTS=ON")
  endif()
  if(RINGWAY_SANITIZE STREQUAL "thread")
    message(FATAL_ERROR "RINGWAY_FUZZ=ON builds with ASan + UBSan: leave RINGWAY_SANITIZE empty")
  endif()
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  check_c_source_compiles("
    #include <stddef.h>
    #include <stdint.h>
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
    RW_HAVE_LIBFUZZER)
  if(NOT RW_HAVE_LIBFUZZER)
    message(FATAL_ERROR "RINGWAY_FUZZ=ON: clang cannot link -fsanitize=fuzzer "
                        "(scripts/install-deps.sh fuzz installs libclang-rt-dev)")
  endif()
endfunction()

# rw_add_fuzzer(NAME SOURCES files... CORPUS dir [LIBS libs...])
# With RINGWAY_FUZZ=ON: a libFuzzer executable of SOURCES built with
# -DRW_FUZZ_LIBFUZZER (part of the `fuzzers` target, not of `all`), listed
# in <build>/fuzzers.txt with its seed folder CORPUS, which scripts/fuzz.sh
# only reads.  Otherwise nothing.
function(rw_add_fuzzer name)
  if(NOT RINGWAY_FUZZ)
    return()
  endif()
  cmake_parse_arguments(F "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  if(NOT F_CORPUS)
    message(FATAL_ERROR "rw_add_fuzzer(${name}): CORPUS is required")
  endif()
  add_executable(${name} EXCLUDE_FROM_ALL ${F_SOURCES})
  target_compile_definitions(${name} PRIVATE RW_FUZZ_LIBFUZZER)
  target_link_libraries(${name} PRIVATE rw_core ${F_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzzers ${name})
  set_property(GLOBAL APPEND PROPERTY RW_FUZZERS "${name}\t$<TARGET_FILE:${name}>\t${F_CORPUS}")
endfunction()
