# Warnings for skydb's own targets only (third-party headers are included as SYSTEM).
add_library(skydb_warnings INTERFACE)
target_compile_options(skydb_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       $<$<BOOL:${SKYDB_WERROR}>:-Werror>)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(skydb_warnings INTERFACE -Wthread-safety)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports impossible -Wrestrict overlaps inside std::string assignment (GCC bug
  # 105329, fixed in 13); it fires on correct code such as optional<string> = "C".
  target_compile_options(skydb_warnings INTERFACE -Wno-restrict)
endif()
