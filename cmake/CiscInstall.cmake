# The installed system beyond the libraries and binaries (included last
# from the top CMakeLists.txt, so these rules run after every other
# install rule): the mount(8) helpers where mount looks, man pages (man/),
# bash completion, the systemd unit and the fstab example, the dynamic
# linker's cache, and `make uninstall` from the install manifest.
#
# Paths that name the install prefix are decided when installing, not
# when configuring: `cmake --install --prefix DIR` (a packager's staging
# tree, a user's ~/opt) puts everything under DIR and points into DIR.

# mount(8) looks for mount.TYPE in /sbin (util-linux's "/sbin:/sbin/fs.d:
# /sbin/fs"; /sbin is /usr/sbin on a merged-/usr system).
set(CISC_MOUNT_HELPER_DIR "" CACHE PATH
    "Where mount.ciscfs and mount.fuse.ciscfs go; empty: /sbin for the /usr and /usr/local prefixes, PREFIX/sbin for any other")
set(CISC_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "systemd unit directory, relative to the prefix (systemd reads /usr/local/lib/systemd/system too)")
set(CISC_BASH_COMPLETIONDIR "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" CACHE STRING
    "bash completion directory, relative to the prefix")
option(CISC_LDCONFIG
    "On a real install (as root, no DESTDIR, the configured prefix): add an ld.so.conf.d entry for the library directory and run ldconfig"
    ON)

install(FILES ${PROJECT_SOURCE_DIR}/completion/cisc.bash DESTINATION ${CISC_BASH_COMPLETIONDIR}
        RENAME cisc)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/fstab.example
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Written at install time, with the install-time prefix.
install(CODE "
set(CISC_SRC \"${PROJECT_SOURCE_DIR}\")
set(CISC_HELPER_DIR \"${CISC_MOUNT_HELPER_DIR}\")
set(CISC_UNITDIR \"${CISC_SYSTEMD_UNITDIR}\")
set(CISC_BINDIR_REL \"${CMAKE_INSTALL_BINDIR}\")
set(CISC_LIBDIR_REL \"${CMAKE_INSTALL_LIBDIR}\")
set(CISC_DOCDIR_REL \"${CMAKE_INSTALL_DOCDIR}\")
set(CISC_SYSCONFDIR_REL \"${CMAKE_INSTALL_SYSCONFDIR}\")
set(CISC_CONFIGURED_PREFIX \"${CMAKE_INSTALL_PREFIX}\")
set(CISC_LDCONFIG_ON ${CISC_LDCONFIG})
include(\"${PROJECT_SOURCE_DIR}/cmake/install_system.cmake\")
")

add_custom_target(uninstall
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${PROJECT_BINARY_DIR}/install_manifest.txt
            -P ${PROJECT_SOURCE_DIR}/cmake/uninstall.cmake
    COMMENT "Removing every file the last install wrote (install_manifest.txt)" VERBATIM)
