# Warnings for skydb's own targets only (third-party headers are included as SYSTEM).
add_library(skydb_warnings INTERFACE)
target_compile_options(skydb_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       $<$<BOOL:${SKYDB_WERROR}>:-Werror>)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(skydb_warnings INTERFACE -Wthread-safety)
endif()
