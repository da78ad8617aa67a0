# SPDX-License-Identifier: BSD-2-Clause
# The man page, the Debian copyright and changelog files, and a .deb through CPack
# (scripts/package-deb.sh builds it with the prefix /usr and checks it with lintian).
find_program(GZIP_EXECUTABLE gzip REQUIRED)
string(TIMESTAMP SR_BUILD_DATE "%Y-%m-%d" UTC)
string(TIMESTAMP SR_BUILD_RFC2822 "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(SOFTRDMA_MAINTAINER "softrdma maintainers <softrdma@users.noreply.github.com>"
    CACHE STRING "Maintainer named in the Debian package")

# Compressed reproducibly (-n: no name or time stamp), as Debian wants man pages and changelogs.
set(SR_MAN_IN ${CMAKE_CURRENT_SOURCE_DIR}/docs/man/softrdma.1)
set(SR_MAN ${CMAKE_CURRENT_BINARY_DIR}/softrdma.1)
set(SR_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/changelog)
configure_file(${SR_MAN_IN} ${SR_MAN} @ONLY)
file(WRITE ${SR_CHANGELOG}
  "softrdma (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
  "  * Upstream release ${PROJECT_VERSION}; see /usr/share/doc/softrdma/CHANGELOG.md.\n\n"
  " -- ${SOFTRDMA_MAINTAINER}  ${SR_BUILD_RFC2822}\n")
add_custom_command(OUTPUT softrdma.1.gz changelog.gz
  COMMAND ${GZIP_EXECUTABLE} -9nkf softrdma.1
  COMMAND ${GZIP_EXECUTABLE} -9nkf changelog
  DEPENDS ${SR_MAN} ${SR_CHANGELOG}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
add_custom_target(softrdma_docs ALL DEPENDS softrdma.1.gz changelog.gz)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/softrdma.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz packaging/debian/copyright CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The demo and the container's entrypoint (Dockerfile), in <libexecdir>/softrdma.
install(TARGETS sr_rc_demo RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/softrdma)
install(PROGRAMS packaging/demo.sh DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/softrdma RENAME demo)
install(PROGRAMS packaging/docker/entrypoint.sh DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/softrdma
        RENAME entrypoint)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME softrdma)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SOFTRDMA_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SOFTRDMA_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)  # private libraries: nothing links to them by name
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RDMA verbs and connection manager without RDMA hardware")
set(CPACK_PACKAGE_DESCRIPTION
  "softrdma is a user-space implementation of libibverbs and librdmacm over TCP,\n"
  "UDP and shared memory. Unmodified RDMA programs, and the stacks built on verbs\n"
  "(UCX, MPI, libfabric), run on any Linux machine without an RDMA NIC, kernel\n"
  "RDMA modules or root: through `softrdma run`, or with /usr/lib/<arch>/softrdma\n"
  "first on the library path. It installs beside Debian's rdma-core and never\n"
  "replaces it. The softrdma command also lists devices, shows live counters and\n"
  "open resources of running programs, and checks the set-up.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
# CPack puts the summary first itself: the long description must not repeat it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
include(CPack)
