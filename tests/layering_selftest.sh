#!/usr/bin/env bash
# Proves cmake/layering.cmake refuses wrong-way links: configures a small project laid out like
# ours (support, target, dsl, interp, lower, cache, jit_backends, jit, runtime) once as it is, which
# must succeed, then once per planted edge, which must fail naming exactly that edge.
# Usage: layering_selftest.sh <monotile source dir> <cmake> <generator>
set -euo pipefail
source_dir=$1
cmake=$2
generator=$3
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree"/{support,dsl/interp,dsl/lower,cache,jit,runtime}
: > "$tree/empty.cpp"
printf 'int main() { return 0; }\n' > "$tree/main.cpp"
cat > "$tree/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(layering_fixture LANGUAGES CXX)
include(${MONOTILE_SOURCE_DIR}/cmake/monotile.cmake)
set(EMPTY ${PROJECT_SOURCE_DIR}/empty.cpp)
add_subdirectory(support)
add_subdirectory(dsl)
add_subdirectory(cache)
add_subdirectory(jit)
add_subdirectory(runtime)
if(PLANT_LAYER)
  monotile_layer(${PLANT_LAYER} nosuch)
endif()
if(PLANT_FROM)
  target_link_libraries(${PLANT_FROM} PRIVATE ${PLANT_TO})
endif()
monotile_check_layering()
EOF
printf 'monotile_library(monotile_support SOURCES ${EMPTY})\n' > "$tree/support/CMakeLists.txt"
cat > "$tree/dsl/CMakeLists.txt" <<'EOF'
monotile_library(monotile_target SOURCES ${EMPTY} DEPS monotile_support)
monotile_layer(monotile_target target)
monotile_library(monotile_dsl SOURCES ${EMPTY} DEPS monotile_target monotile_support)
add_subdirectory(interp)
add_subdirectory(lower)
EOF
cat > "$tree/dsl/interp/CMakeLists.txt" <<'EOF'
monotile_library(monotile_dsl_interp SOURCES ${EMPTY} DEPS monotile_dsl)
monotile_layer(monotile_dsl_interp interp)
add_library(monotile::interp ALIAS monotile_dsl_interp)
EOF
cat > "$tree/dsl/lower/CMakeLists.txt" <<'EOF'
monotile_library(monotile_dsl_lower SOURCES ${EMPTY} DEPS monotile_dsl)
monotile_layer(monotile_dsl_lower lower)
EOF
printf 'monotile_library(monotile_cache SOURCES ${EMPTY} DEPS monotile_support)\n' > "$tree/cache/CMakeLists.txt"
cat > "$tree/jit/CMakeLists.txt" <<'EOF'
monotile_library(monotile_jit_backends SOURCES ${EMPTY} DEPS monotile_target)
monotile_layer(monotile_jit_backends jit_backends)
add_executable(monotile_jit_worker ${PROJECT_SOURCE_DIR}/main.cpp)
target_link_libraries(monotile_jit_worker PRIVATE monotile_jit_backends)
monotile_layer(monotile_jit_worker jit_backends)
monotile_library(monotile_jit SOURCES ${EMPTY} DEPS monotile_jit_backends monotile_cache monotile_dsl_lower)
EOF
printf 'monotile_library(monotile_runtime SOURCES ${EMPTY} DEPS monotile_dsl_interp monotile_jit)\n' \
  > "$tree/runtime/CMakeLists.txt"

run=0
output=
configure() {
  run=$((run + 1))
  status=0
  output=$("$cmake" -S "$tree" -B "$tree/build$run" -G "$generator" -DMONOTILE_SOURCE_DIR="$source_dir" "$@" 2>&1) ||
    status=$?
}
fail() { echo "FAIL: $*"; echo "--- output ---"; echo "$output"; exit 1; }

configure
[ "$status" -eq 0 ] || fail "the fixture's own layering was refused"

# Each plant: the link to add (from, to) and the one line the check must print for it.
refused() {
  local from=$1 to=$2 expected=$3
  configure -DPLANT_FROM="$from" -DPLANT_TO="$to"
  [ "$status" -ne 0 ] || fail "$from -> $to was accepted"
  grep -qF "$expected" <<<"$output" || fail "$from -> $to: missing \"$expected\""
  found=$(grep -c ' links .*, but .* may link only ' <<<"$output" || true)
  [ "$found" -eq 1 ] || fail "$from -> $to: expected 1 refused edge, got $found"
}
refused monotile_dsl monotile_dsl_interp \
  'monotile_dsl (dsl) links monotile_dsl_interp (interp), but dsl may link only support, target'
refused monotile_dsl monotile_dsl_lower \
  'monotile_dsl (dsl) links monotile_dsl_lower (lower), but dsl may link only support, target'
refused monotile_dsl_interp monotile_dsl_lower \
  'monotile_dsl_interp (interp) links monotile_dsl_lower (lower), but interp may link only support, target, dsl'
refused monotile_target monotile_dsl \
  'monotile_target (target) links monotile_dsl (dsl), but target may link only support'
refused monotile_support monotile_target \
  'monotile_support (support) links monotile_target (target), but support may link only nothing'
refused monotile_jit_worker monotile_dsl \
  'monotile_jit_worker (jit_backends) links monotile_dsl (dsl), but jit_backends may link only support, target'
refused monotile_cache monotile_jit \
  'monotile_cache (cache) links monotile_jit (jit), but cache may link only support'
refused monotile_jit monotile::interp \
  'monotile_jit (jit) links monotile_dsl_interp (interp), but jit may link only support, target, dsl, lower, cache, jit_backends'
refused monotile_jit monotile_runtime \
  'monotile_jit (jit) links monotile_runtime (runtime), but jit may link only'

configure -DPLANT_LAYER=monotile_cache
[ "$status" -ne 0 ] || fail "a layer without a rule was accepted"
grep -qF 'monotile_cache is in layer "nosuch", which has no monotile_layer_rule' <<<"$output" ||
  fail "no message for the undeclared layer"

echo "PASS: the fixture configures; each of the $((run - 2)) planted edges and the undeclared layer is refused by name"
