# Install layout and the .debs (cpack -G DEB in the build directory; tools/package-test.sh
# builds them, runs lintian, installs, checks and purges them). Paths follow Debian: /usr/bin,
# /etc/skydb, /lib/systemd/system (units), /usr/lib/sysusers.d, /usr/lib/tmpfiles.d,
# /usr/share/man/man1, /usr/share/doc/PACKAGE. Three packages, one per component:
#   skydb         (Unspecified)  the daemon and CLI, its configuration, units, pages and docs
#   libskydb0     (lib)          libskydb.so.0, the C++ embedding API (docs/cpp-api.md)
#   libskydb-dev  (dev)          its headers, libskydb.so, the CMake package and skydb.pc
# docs/operations.md ("The package") shows the layout and says why each choice was made.
set(SKYDB_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(SKYDB_MAINTAINER "skydb maintainers <maintainers@users.noreply.a-seed-9982e383.example>"
    CACHE STRING "the packages' Maintainer: (a distributor sets its own)")

# The configuration may hold resp.requirepass and a database URL once edited: postinst makes
# it 0640 root:skydb (unless dpkg-statoverride names it). It ships 0644 as Debian's files do;
# the shipped defaults hold no secret, and dpkg never replaces an edited conffile.
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

# Each package's copyright and changelog (native: changelog.gz, gzip -9n as lintian wants).
set(SKYDB_CHANGELOG ${SKYDB_PACKAGING_DIR}/debian/changelog)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SKYDB_CHANGELOG})
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging)
execute_process(COMMAND gzip -9n -c ${SKYDB_CHANGELOG}
                OUTPUT_FILE ${PROJECT_BINARY_DIR}/packaging/changelog.gz COMMAND_ERROR_IS_FATAL ANY)
foreach(package_component IN ITEMS "skydb;Unspecified" "libskydb0;lib" "libskydb-dev;dev")
  list(GET package_component 0 package)
  list(GET package_component 1 component)
  install(FILES ${SKYDB_PACKAGING_DIR}/debian/copyright ${PROJECT_BINARY_DIR}/packaging/changelog.gz
          DESTINATION share/doc/${package} COMPONENT ${component})
  # lintian's overrides: each names why (docs/operations.md, "The package").
  if(EXISTS ${SKYDB_PACKAGING_DIR}/debian/${package}/lintian-overrides)
    install(FILES ${SKYDB_PACKAGING_DIR}/debian/${package}/lintian-overrides
            DESTINATION share/lintian/overrides RENAME ${package} COMPONENT ${component})
  endif()
endforeach()

# skydb(1) and a page per command, generated from the CLI's own --help by help2man
# (packaging/man/make-man.sh) whenever skydb is linked. packaging/man/check-man.sh fails when a
# page and --help disagree: tools/package-test.sh runs it on the installed pages, ctest on the
# build's. Off by default (each link would regenerate them); the package turns it on.
option(SKYDB_MAN "Generate the manual pages from skydb --help (needs help2man)" OFF)
if(SKYDB_MAN)
  find_program(SKYDB_HELP2MAN help2man)
  if(NOT SKYDB_HELP2MAN)
    message(FATAL_ERROR "SKYDB_MAN needs help2man (tools/install-deps.sh test installs it)")
  endif()
  set(SKYDB_MAN_DIR ${PROJECT_BINARY_DIR}/man)
  add_custom_command(OUTPUT ${SKYDB_MAN_DIR}/skydb.1.gz
    COMMAND bash ${SKYDB_PACKAGING_DIR}/man/make-man.sh $<TARGET_FILE:skydb> ${SKYDB_MAN_DIR}
    DEPENDS skydb ${SKYDB_PACKAGING_DIR}/man/make-man.sh ${SKYDB_CHANGELOG}
    COMMENT "Generating skydb's manual pages from its --help")
  add_custom_target(skydb_man ALL DEPENDS ${SKYDB_MAN_DIR}/skydb.1.gz)
  install(DIRECTORY ${SKYDB_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          FILES_MATCHING PATTERN "skydb*.1.gz")
  if(SKYDB_BUILD_TESTS)
    add_test(NAME man_pages_match_help COMMAND bash ${SKYDB_PACKAGING_DIR}/man/check-man.sh
             $<TARGET_FILE:skydb> ${SKYDB_MAN_DIR})
    set_tests_properties(man_pages_match_help PROPERTIES LABELS unit)
  endif()
endif()

# The C++ embedding API (docs/cpp-api.md): libskydb.so.0 in libskydb0 (component lib, mode
# 0644 as a shared library is shipped), the headers, the libskydb.so link, the CMake package
# and skydb.pc in libskydb-dev (component dev).
install(TARGETS skydb_shared EXPORT skydbTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
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
set(CPACK_PACKAGE_CONTACT "${SKYDB_MAINTAINER}")
# Each package's Description: below, summary line first. CPack would put this one summary in
# front of every package's; its own default is the value that makes it leave them alone.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # absolute destinations (/etc, /lib/systemd) land in the package
set(CPACK_INSTALL_PREFIX /usr)  # with SET_DESTDIR, the prefix relative destinations use
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends on the shared libraries each binary links
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Unspecified lib dev)

# skydb. PostgreSQL: any supported major of Debian or PGDG (15 first: what apt installs when
# none is there), or nothing when the binary carries its own bundle (-DSKYDB_EMBED_BUNDLE).
# init-system-helpers: deb-systemd-helper and deb-systemd-invoke in the maintainer scripts.
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_NAME skydb)
set(skydb_depends "systemd, init-system-helpers (>= 1.52)")
if(SKYDB_EMBED_BUNDLE)
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS "${skydb_depends}")
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_RECOMMENDS "redis-tools, zstd, lz4")
else()
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS
      "postgresql-15 | postgresql-16 | postgresql-17 | postgresql-18 | postgresql-14, ${skydb_depends}")
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_RECOMMENDS
      "postgresql-client-15 | postgresql-client-16 | postgresql-client-17 | postgresql-client-18 | postgresql-client-14, redis-tools, zstd, lz4")
endif()
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_CONTROL_EXTRA
    "${SKYDB_PACKAGING_DIR}/debian/conffiles;${SKYDB_PACKAGING_DIR}/debian/postinst;${SKYDB_PACKAGING_DIR}/debian/prerm;${SKYDB_PACKAGING_DIR}/debian/postrm")
set(CPACK_DEBIAN_UNSPECIFIED_DESCRIPTION
"session store with an embedded, supervised PostgreSQL (Redis protocol)
skydb runs a private PostgreSQL cluster for an application and serves a
durable session store in front of it over the Redis protocol.

The supervisor finds PostgreSQL's binaries (the distribution's, of any
major from 14 to 18, or a relocatable bundle), initialises the cluster,
derives its settings from the host's memory and cores, restarts it after a
crash and stops it cleanly, and reports readiness and health to systemd.

The session store keeps sessions in memory and commits them to PostgreSQL
in batches (group commit), so that thousands of writes a second cost a few
fsyncs; any Redis client or session adapter talks to it unchanged. Several
daemons can share one external PostgreSQL instead of a private cluster.

Prometheus metrics, health endpoints, base backups with point-in-time
restore and major-version upgrades are included.")

# libskydb0: the library alone. Its shlibs say "libskydb 0 libskydb0 (>= VERSION)": an app
# needs at least the version it was built with, any later one of SONAME 0 will do (the ABI
# policy in docs/operations.md). triggers runs ldconfig as Debian wants; CPack adds its own
# postinst and postrm that call it too (lintian-overridden, docs/operations.md).
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libskydb0)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA "${SKYDB_PACKAGING_DIR}/debian/libskydb0/triggers")
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_LIB_DESCRIPTION
"embedded PostgreSQL and session store for C++ applications
libskydb runs skydb's lifecycle inside a C++ application: a private
PostgreSQL cluster under a data directory, tuned to the host and watched,
and the Redis-protocol session store in front of it, started and stopped
with the application.

This package holds the shared library; libskydb-dev has what building
against it needs.")

# libskydb-dev.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libskydb-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libskydb0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"embedded PostgreSQL and session store for C++ applications (headers)
libskydb runs skydb's lifecycle inside a C++ application: a private
PostgreSQL cluster under a data directory and the Redis-protocol session
store in front of it, started and stopped with the application.

This package holds the headers (skydb/embedded.h and what it includes),
the libskydb.so link, the CMake package (find_package(skydb), target
skydb::skydb) and skydb.pc for pkg-config. Applications compile as C++20.")
include(CPack)
