# ASan + UBSan for the whole build (CI's test run uses it), or ThreadSanitizer (CI runs the
# store's and the protocol's unit tests under it). The two cannot share a process.
if(SKYDB_SANITIZE AND SKYDB_TSAN)
  message(FATAL_ERROR "SKYDB_SANITIZE and SKYDB_TSAN cannot be combined: ThreadSanitizer "
                      "excludes AddressSanitizer; configure a separate build directory for each")
endif()
if(SKYDB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(SKYDB_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
