# Run by `cmake --install` (cmake/CiscInstall.cmake sets the CISC_*
# variables): the pieces whose place or content depends on the prefix
# given at install time. Every file written is added to the manifest, so
# `make uninstall` removes it.

function(cisc_abs out rel)
    if(IS_ABSOLUTE "${rel}")
        set(${out} "${rel}" PARENT_SCOPE)
    else()
        set(${out} "${CMAKE_INSTALL_PREFIX}/${rel}" PARENT_SCOPE)
    endif()
endfunction()

macro(cisc_installed path)
    message(STATUS "Installing: ${path}")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${path}")
endmacro()

cisc_abs(bindir "${CISC_BINDIR_REL}")
cisc_abs(libdir "${CISC_LIBDIR_REL}")
cisc_abs(docdir "${CISC_DOCDIR_REL}")
cisc_abs(unitdir "${CISC_UNITDIR}")
# /usr and /usr/local read their configuration from /etc, others from PREFIX/etc.
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?/?$" AND NOT IS_ABSOLUTE "${CISC_SYSCONFDIR_REL}")
    set(sysconfdir "/etc")
else()
    cisc_abs(sysconfdir "${CISC_SYSCONFDIR_REL}")
endif()

# ---- mount(8) helpers: symlinks to cisc ------------------------------------------
set(helper_dir "${CISC_HELPER_DIR}")
if(helper_dir STREQUAL "")
    if(CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?/?$")
        set(helper_dir "/sbin")
    else()
        set(helper_dir "${CMAKE_INSTALL_PREFIX}/sbin")
    endif()
endif()
if(helper_dir MATCHES "^${CMAKE_INSTALL_PREFIX}/")
    file(RELATIVE_PATH target "${helper_dir}" "${bindir}/cisc")   # relocatable with the prefix
else()
    set(target "${bindir}/cisc")
endif()
file(MAKE_DIRECTORY "$ENV{DESTDIR}${helper_dir}")
foreach(h mount.ciscfs mount.fuse.ciscfs)
    file(REMOVE "$ENV{DESTDIR}${helper_dir}/${h}")
    file(CREATE_LINK "${target}" "$ENV{DESTDIR}${helper_dir}/${h}" SYMBOLIC)
    cisc_installed("$ENV{DESTDIR}${helper_dir}/${h}")
endforeach()

# ---- systemd template unit and its configuration example ---------------------------
set(CISC_BINDIR "${bindir}")
set(CISC_DOCDIR "${docdir}")
set(CISC_SYSCONFDIR "${sysconfdir}")
configure_file("${CISC_SRC}/systemd/ciscfs@.service.in" "$ENV{DESTDIR}${unitdir}/ciscfs@.service"
               @ONLY)
cisc_installed("$ENV{DESTDIR}${unitdir}/ciscfs@.service")
configure_file("${CISC_SRC}/systemd/ciscfs.conf.example"
               "$ENV{DESTDIR}${docdir}/ciscfs.conf.example" @ONLY)
cisc_installed("$ENV{DESTDIR}${docdir}/ciscfs.conf.example")

# ---- the dynamic linker: libcisc found without the user running ldconfig -----------
# Only on a real install: as root, into the live system (no DESTDIR), at the
# configured prefix. A package does this in its postinst instead.
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(CISC_LDCONFIG_ON AND "$ENV{DESTDIR}" STREQUAL "" AND uid STREQUAL "0"
   AND CMAKE_INSTALL_PREFIX STREQUAL CISC_CONFIGURED_PREFIX)
    if(NOT libdir MATCHES "^/(usr/)?lib(64)?/?$")
        file(WRITE "/etc/ld.so.conf.d/ciscfs.conf" "# libcisc (ciscfs)\n${libdir}\n")
        cisc_installed("/etc/ld.so.conf.d/ciscfs.conf")
    endif()
    find_program(LDCONFIG ldconfig PATHS /sbin /usr/sbin)
    if(LDCONFIG)
        execute_process(COMMAND ${LDCONFIG})
        message(STATUS "Ran ldconfig: libcisc is in the dynamic linker's cache")
    endif()
endif()
