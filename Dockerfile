# SPDX-License-Identifier: BSD-2-Clause
# softrdma in a container: RDMA programs run with no RDMA device, kernel module or privilege.
#   docker build -t softrdma .
#   docker run --rm softrdma                                   # the demo (an RC exchange)
#   docker run --rm softrdma sh -c 'rping -s -a 127.0.0.1 & sleep 1; rping -c -a 127.0.0.1 -C 5 -v'
# Every command runs through `softrdma run` (the entrypoint); Debian's RDMA programs
# (rdmacm-utils, ibverbs-utils, perftest) are in the image.
FROM debian:12 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake pkg-config dpkg-dev file \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
 && cmake --build /build -j"$(nproc)" \
 && cd /build && cpack -G DEB

FROM debian:12
COPY --from=build /build/softrdma_*.deb /tmp/
RUN apt-get update \
 && apt-get install -y --no-install-recommends /tmp/softrdma_*.deb rdmacm-utils ibverbs-utils perftest \
 && rm -rf /var/lib/apt/lists/* /tmp/softrdma_*.deb
ENTRYPOINT ["/usr/libexec/softrdma/entrypoint"]
CMD ["/usr/libexec/softrdma/demo"]
