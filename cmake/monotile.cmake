# Helpers that give every target of ours the same standard, warnings and test registration.
include(GoogleTest)
include(${CMAKE_CURRENT_LIST_DIR}/layering.cmake)

# Warnings are always on; turning them into errors is for CI and developers (the README's test
# command sets it), not for someone who only builds the library with another compiler version.
option(MONOTILE_WERROR "Treat compiler warnings in monotile's own code as errors" OFF)

# monotile_warnings(<target>): our warning flags on one target.
function(monotile_warnings name)
  target_compile_options(${name} PRIVATE -Wall -Wextra $<$<BOOL:${MONOTILE_WERROR}>:-Werror>)
endfunction()

# monotile_library(<name> SOURCES ... [DEPS ...]): a static library built with our warnings, in its
# folder's layer (cmake/layering.cmake) unless monotile_layer names another.
function(monotile_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  monotile_warnings(${name})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  monotile_layer_from_folder(${name})
endfunction()

# monotile_test(<name> LABELS ... SOURCES ... [DEPS ...] [TIMEOUT s]): a GoogleTest binary whose
# tests CTest runs one by one (gtest_discover_tests), each carrying the labels.
# SERIAL_TESTS: a regex of the tests that time kernels; CTest runs them alone (RUN_SERIAL), since a
# GPU shared with other tests (CTEST_PARALLEL_LEVEL > 1) would slow some of their launches.
function(monotile_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;SERIAL_TESTS" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  monotile_warnings(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} monotile_testing)
  gtest_discover_tests(${name}
    PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
  # gtest_discover_tests flattens a list-valued property, so several labels are applied by a
  # script CTest runs after the discovered tests are defined (<name>_TESTS is their list).
  set(serial "")
  if(ARG_SERIAL_TESTS)
    set(serial "  if(\"\${test}\" MATCHES \"${ARG_SERIAL_TESTS}\")\n    set_tests_properties(\"\${test}\" PROPERTIES RUN_SERIAL TRUE)\n  endif()\n")
  endif()
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake CONTENT
    "foreach(test IN LISTS ${name}_TESTS)\n  set_tests_properties(\"\${test}\" PROPERTIES LABELS \"${ARG_LABELS}\")\n${serial}endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
    ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
endfunction()
