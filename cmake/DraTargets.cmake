# dra_add_library(NAME <name> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Creates library dra_<name> with alias dra::<name>, the project's warning
# flags, and the public include directory for build and install trees.
set(DRA_WARNING_FLAGS -Wall -Wextra -Werror)
# clang checks the locking rules written down with abseil's annotations
# (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED on absl::Mutex); gcc has no
# such analysis and ignores them.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND DRA_WARNING_FLAGS -Wthread-safety)
endif()

function(dra_project_warnings target)
  target_compile_options(${target} PRIVATE ${DRA_WARNING_FLAGS})
endfunction()

function(dra_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target dra_${ARG_NAME})
  add_library(${target} ${ARG_SOURCES})
  add_library(dra::${ARG_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_NAME} OUTPUT_NAME dra_${ARG_NAME})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  dra_project_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY DRA_INSTALL_TARGETS ${target})
endfunction()
