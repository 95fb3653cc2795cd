# The layering of our libraries, checked at configure time: every library belongs to a layer (its
# folder, or the one monotile_layer names), and a link to a library of another layer must be one
# that layer's rule allows. A wrong-way link fails configuration, naming the edge.

# monotile_layer(<target> <layer>): the layer of <target>, where its folder does not say it (the
# Target library in dsl/, the interpreter, the lowering, the compile worker, test helpers).
function(monotile_layer target layer)
  set_property(TARGET ${target} PROPERTY MONOTILE_LAYER ${layer})
  set_property(GLOBAL APPEND PROPERTY MONOTILE_LAYERED_TARGETS ${target})
endfunction()

# monotile_layer_from_folder(<target>): the layer of a library defined in <folder>/..., its first
# folder (support, cache, kernels, ...); monotile_library calls it for every library.
function(monotile_layer_from_folder target)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "/.*" "" layer "${folder}")
  if(layer STREQUAL "")
    set(layer top)
  endif()
  monotile_layer(${target} ${layer})
endfunction()

# monotile_layer_rule(<layer> MAY_LINK <layer>... | ANY): the layers <layer>'s libraries may link
# besides their own. ANY is for what sits above everything (tools, tests). The rules are closed
# under composition (a layer may link everything its allowed layers may), so checking direct links
# checks every path.
function(monotile_layer_rule layer)
  cmake_parse_arguments(ARG "ANY" "" "MAY_LINK" ${ARGN})
  if(ARG_ANY)
    set_property(GLOBAL PROPERTY MONOTILE_LAYER_ANY_${layer} TRUE)
  endif()
  set_property(GLOBAL PROPERTY MONOTILE_LAYER_RULE_${layer} "${ARG_MAY_LINK}")
  set_property(GLOBAL PROPERTY MONOTILE_LAYER_DECLARED_${layer} TRUE)
endfunction()

# The direction of docs/ARCHITECTURE.md: support <- target <- dsl <- {interp, lower};
# target <- jit_backends (the compile worker); support <- cache <- jit <- runtime; lower <- jit;
# dsl <- kernels; jit <- kernels; kernels <- runtime; model below kernels and runtime.
monotile_layer_rule(support)
monotile_layer_rule(target MAY_LINK support)
monotile_layer_rule(dsl MAY_LINK support target)
monotile_layer_rule(interp MAY_LINK support target dsl)
monotile_layer_rule(lower MAY_LINK support target dsl)
monotile_layer_rule(cache MAY_LINK support)
monotile_layer_rule(model MAY_LINK support)
monotile_layer_rule(jit_backends MAY_LINK support target)
monotile_layer_rule(jit MAY_LINK support target dsl lower cache jit_backends)
monotile_layer_rule(kernels MAY_LINK support target dsl lower cache jit_backends jit model)
monotile_layer_rule(runtime MAY_LINK support target dsl interp lower cache jit_backends jit model kernels)
monotile_layer_rule(tools ANY)
monotile_layer_rule(python ANY)
monotile_layer_rule(tests ANY)
monotile_layer_rule(docs ANY)

# The targets <target> links directly (private and interface), aliases resolved, LINK_ONLY unwrapped.
function(_monotile_direct_links target out)
  get_target_property(private ${target} LINK_LIBRARIES)
  get_target_property(interface ${target} INTERFACE_LINK_LIBRARIES)
  set(links)
  foreach(item IN LISTS private interface)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    if(item AND TARGET "${item}")
      get_target_property(aliased ${item} ALIASED_TARGET)
      if(aliased)
        set(item ${aliased})
      endif()
      list(APPEND links ${item})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES links)
  set(${out} "${links}" PARENT_SCOPE)
endfunction()

# monotile_check_layering(): after every folder is added, fails configuration on the first layer
# nobody declared, then on every link against the rules, all named in one message.
function(monotile_check_layering)
  get_property(targets GLOBAL PROPERTY MONOTILE_LAYERED_TARGETS)
  list(REMOVE_DUPLICATES targets)
  set(errors)
  foreach(target IN LISTS targets)
    get_target_property(layer ${target} MONOTILE_LAYER)
    get_property(declared GLOBAL PROPERTY MONOTILE_LAYER_DECLARED_${layer})
    if(NOT declared)
      list(APPEND errors "${target} is in layer \"${layer}\", which has no monotile_layer_rule")
      continue()
    endif()
    get_property(any GLOBAL PROPERTY MONOTILE_LAYER_ANY_${layer})
    if(any)
      continue()
    endif()
    get_property(allowed GLOBAL PROPERTY MONOTILE_LAYER_RULE_${layer})
    _monotile_direct_links(${target} links)
    foreach(link IN LISTS links)
      get_target_property(link_layer ${link} MONOTILE_LAYER)
      if(NOT link_layer OR link_layer STREQUAL layer OR link_layer IN_LIST allowed)
        continue()
      endif()
      if(allowed)
        string(REPLACE ";" ", " allowed_text "${allowed}")
      else()
        set(allowed_text "nothing")
      endif()
      list(APPEND errors
        "${target} (${layer}) links ${link} (${link_layer}), but ${layer} may link only ${allowed_text}")
    endforeach()
  endforeach()
  if(errors)
    list(JOIN errors "\n  " text)
    message(FATAL_ERROR "wrong-way links between layers (cmake/layering.cmake):\n  ${text}")
  endif()
endfunction()
