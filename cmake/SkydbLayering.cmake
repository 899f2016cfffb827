# The layering wall, enforced by the include path (docs/architecture.md).
#
# skydb_layer(TARGET LIB [EXPORTS header...]): TARGET, the library of src/LIB, sees
#   - its own headers as "LIB/...", through a private include root that holds only src/LIB;
#   - include/ (the public API), through skydb_base;
#   - the headers other libraries export, as "OTHER/...", through their PUBLIC export roots,
#     and only for the libraries it links.
# A library's EXPORTS are the headers other libraries may include; every other header of it is
# internal, and including it from another library fails to compile ("file not found").
function(skydb_layer target lib)
  cmake_parse_arguments(ARG "" "" "EXPORTS" ${ARGN})
  set(private ${PROJECT_BINARY_DIR}/layering/private/${lib})
  file(REMOVE_RECURSE ${private})
  file(MAKE_DIRECTORY ${private})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${lib} ${private}/${lib} SYMBOLIC)
  target_include_directories(${target} PRIVATE ${private})
  set(exports ${PROJECT_BINARY_DIR}/layering/exports/${lib})
  file(REMOVE_RECURSE ${exports})
  if(ARG_EXPORTS)
    file(MAKE_DIRECTORY ${exports}/${lib})
    foreach(header ${ARG_EXPORTS})
      if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/${lib}/${header})
        message(FATAL_ERROR "skydb_layer(${lib}): exported header ${header} does not exist")
      endif()
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${lib}/${header} ${exports}/${lib}/${header}
           SYMBOLIC)
    endforeach()
    target_include_directories(${target} PUBLIC ${exports})
  endif()
endfunction()
