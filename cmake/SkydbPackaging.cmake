# Install layout and the .deb (cpack -G DEB in the build directory; tools/package-test.sh
# builds, installs, checks and removes it). Paths follow Debian: /usr/bin, /etc/skydb,
# /lib/systemd/system (units), /usr/lib/sysusers.d, /usr/lib/tmpfiles.d, /usr/share/doc/skydb.
set(SKYDB_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/conf/skydb.toml DESTINATION /etc/skydb)
install(FILES ${SKYDB_PACKAGING_DIR}/skydb.service ${SKYDB_PACKAGING_DIR}/skydb@.service
              ${SKYDB_PACKAGING_DIR}/skydb-app@.service
        DESTINATION /lib/systemd/system)
install(FILES ${SKYDB_PACKAGING_DIR}/sysusers.d/skydb.conf DESTINATION lib/sysusers.d)
install(FILES ${SKYDB_PACKAGING_DIR}/tmpfiles.d/skydb.conf DESTINATION lib/tmpfiles.d)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${SKYDB_PACKAGING_DIR}/grafana-dashboard.json
        DESTINATION share/doc/skydb)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/skydb FILES_MATCHING
        PATTERN "*.md")

# The C++ embedding API (docs/cpp-api.md): libskydb.so.N goes with the daemon in the skydb
# package (component Unspecified, like everything above); the headers, the libskydb.so link,
# the CMake package and skydb.pc go in libskydb-dev (component dev).
install(TARGETS skydb_shared EXPORT skydbTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT dev)
# embedded.h and exactly the public headers it includes.
install(FILES ${PROJECT_SOURCE_DIR}/include/skydb/embedded.h
              ${PROJECT_SOURCE_DIR}/include/skydb/app_env.h
              ${PROJECT_SOURCE_DIR}/include/skydb/config.h
              ${PROJECT_SOURCE_DIR}/include/skydb/result.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/skydb COMPONENT dev)
set(SKYDB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/skydb)
install(EXPORT skydbTargets NAMESPACE skydb:: DESTINATION ${SKYDB_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/skydbConfig.cmake.in
  ${PROJECT_BINARY_DIR}/skydbConfig.cmake INSTALL_DESTINATION ${SKYDB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/skydbConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/skydbConfig.cmake ${PROJECT_BINARY_DIR}/skydbConfigVersion.cmake
        DESTINATION ${SKYDB_CMAKE_DIR} COMPONENT dev)
# skydb.pc finds its prefix from where it lies, so the .deb's /usr and a local prefix both work.
file(RELATIVE_PATH SKYDB_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/skydb.pc.in ${PROJECT_BINARY_DIR}/skydb.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/skydb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME skydb)
set(CPACK_PACKAGE_VENDOR skydb)
set(CPACK_PACKAGE_CONTACT "skydb maintainers <skydb@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "session store with an embedded, supervised PostgreSQL (Redis protocol)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # absolute destinations (/etc, /lib/systemd) land in the package
set(CPACK_INSTALL_PREFIX /usr)  # with SET_DESTDIR, the prefix relative destinations use
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends on the exact shared libraries linked
# PostgreSQL: any supported major Debian or PGDG packages (15 first: what apt installs when
# none is there), or nothing when the binary carries its own bundle (-DSKYDB_EMBED_BUNDLE).
if(SKYDB_EMBED_BUNDLE)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "redis-tools, zstd, lz4")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "postgresql-15 | postgresql-16 | postgresql-17 | postgresql-18 | postgresql-14, systemd")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
      "postgresql-client-15 | postgresql-client-16 | postgresql-client-17 | postgresql-client-18 | postgresql-client-14, redis-tools, zstd, lz4")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # shlibs and the ldconfig trigger for libskydb
# One package per component: skydb (Unspecified) and libskydb-dev (dev). The maintainer
# scripts are the daemon package's only: a global CONTROL_EXTRA would go into -dev too.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_NAME skydb)
# triggers: ldconfig after libskydb.so.N comes or goes (CPack adds it only to its own postinst).
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_CONTROL_EXTRA
    "${SKYDB_PACKAGING_DIR}/debian/conffiles;${SKYDB_PACKAGING_DIR}/debian/postinst;${SKYDB_PACKAGING_DIR}/debian/prerm;${SKYDB_PACKAGING_DIR}/debian/postrm;${SKYDB_PACKAGING_DIR}/debian/triggers")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libskydb-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "skydb (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "pkg-config")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "skydb's C++ embedding API: headers, CMake package (skydb::skydb) and skydb.pc")
include(CPack)
