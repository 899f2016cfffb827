# Install layout and the .deb (cpack -G DEB in the build directory; tools/package-test.sh
# builds, installs, checks and removes it). Paths follow Debian: /usr/bin, /etc/skydb,
# /lib/systemd/system (units), /usr/lib/sysusers.d, /usr/lib/tmpfiles.d, /usr/share/doc/skydb.
set(SKYDB_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

install(FILES ${PROJECT_SOURCE_DIR}/conf/skydb.toml DESTINATION /etc/skydb)
install(FILES ${SKYDB_PACKAGING_DIR}/skydb.service ${SKYDB_PACKAGING_DIR}/skydb@.service
        DESTINATION /lib/systemd/system)
install(FILES ${SKYDB_PACKAGING_DIR}/sysusers.d/skydb.conf DESTINATION lib/sysusers.d)
install(FILES ${SKYDB_PACKAGING_DIR}/tmpfiles.d/skydb.conf DESTINATION lib/tmpfiles.d)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${SKYDB_PACKAGING_DIR}/grafana-dashboard.json
        DESTINATION share/doc/skydb)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/skydb FILES_MATCHING
        PATTERN "*.md")

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
set(CPACK_DEBIAN_PACKAGE_DEPENDS "postgresql-15, systemd")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "postgresql-client-15, redis-tools")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${SKYDB_PACKAGING_DIR}/debian/conffiles;${SKYDB_PACKAGING_DIR}/debian/postinst;${SKYDB_PACKAGING_DIR}/debian/prerm;${SKYDB_PACKAGING_DIR}/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
