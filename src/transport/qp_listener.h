// SPDX-License-Identifier: BSD-2-Clause
// Raw-verbs RC/UC connection setup: every QP number names a TCP listener of this process
// (QPN = listener port << 8 | slot), so a peer that knows our GID and QPN can reach the QP
// without any out-of-band help. One listener serves 256 QPs; more QPs open more listeners.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>

#include "transport/mpa_handshake.h"
#include "transport/progress_engine.h"
#include "wire/qp_hello.h"

namespace softrdma::transport {

// Implemented by a verbs QP: answers incoming MPA requests addressed to its QPN.
class QpAcceptor {
  public:
    virtual ~QpAcceptor() = default;
    virtual MpaHandshake::Decision on_hello(const wire::MpaFrame &req,
                                            const wire::QpHello &hello) = 0;
    virtual void on_passive_connected(MpaHandshake::Result &&r) = 0;
};

constexpr uint32_t kSlotsPerListener = 256;
// Slot 0xff is never handed out by a listener: QPN port << 8 | 0xff names the UD QP whose UDP
// socket has that port (TCP and UDP ports are separate spaces; the slot keeps QPNs unique).
constexpr uint32_t kUdSlot = 0xff;

inline uint16_t qpn_port(uint32_t qpn) {
    return uint16_t(qpn >> 8);
}
// The QPN of the UD QP whose UDP socket has `port`.
inline uint32_t ud_qpn(uint16_t port) {
    return uint32_t(port) << 8 | kUdSlot;
}

// Returns a fresh QPN routed to `qp`, or 0 with errno set.
uint32_t register_qp(const std::shared_ptr<QpAcceptor> &qp);
void unregister_qp(uint32_t qpn);

// Encodes a reply frame carrying `status` (reject flag set unless kAccept).
std::vector<uint8_t> encode_hello_reply(const wire::QpHello &request, wire::QpHelloStatus status,
                                        uint16_t flags, uint16_t ird, uint16_t ord);

}  // namespace softrdma::transport
