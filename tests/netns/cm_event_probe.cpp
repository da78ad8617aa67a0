// Prints the CM events an id bound to <ip>:<port> receives while the test script changes the
// interface under it (run inside a network namespace by cm_device_events.sh).
#include <arpa/inet.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <ctime>

// `resolve <ip> <timeout_ms>`: prints the outcome of rdma_resolve_addr and how long it took.
static int resolve(const char *ip, int timeout_ms) {
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *id;
    if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return 3;
    sockaddr_in d{};
    d.sin_family = AF_INET;
    d.sin_port = htons(7000);
    if (inet_pton(AF_INET, ip, &d.sin_addr) != 1) return 4;
    timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), timeout_ms)) {
        std::printf("CALL_ERROR %d\n", errno);
        return 0;
    }
    rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev)) return 6;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    std::printf("EVENT %s %d after %ld ms\n", rdma_event_str(ev->event), ev->status, ms);
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}

// `connect <ip> <port>`: resolves, connects, prints the event the connect ends with.
static int connect_to(const char *ip, int port) {
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *id;
    if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return 3;
    sockaddr_in d{};
    d.sin_family = AF_INET;
    d.sin_port = htons(uint16_t(port));
    if (inet_pton(AF_INET, ip, &d.sin_addr) != 1) return 4;
    rdma_cm_event *ev;
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 2000) ||
        rdma_get_cm_event(ch, &ev))
        return 5;
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, 2000) || rdma_get_cm_event(ch, &ev)) return 6;
    rdma_ack_cm_event(ev);
    if (rdma_connect(id, nullptr) || rdma_get_cm_event(ch, &ev)) return 7;
    std::printf("EVENT %s %d\n", rdma_event_str(ev->event), ev->status);
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && std::strcmp(argv[1], "resolve") == 0) return resolve(argv[2], std::atoi(argv[3]));
    if (argc == 4 && std::strcmp(argv[1], "connect") == 0) return connect_to(argv[2], std::atoi(argv[3]));
    if (argc != 3) return 2;
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *id;
    if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return 3;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(std::atoi(argv[2])));
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) return 4;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) || rdma_listen(id, 1)) {
        std::perror("bind/listen");
        return 5;
    }
    std::printf("READY %s\n", ibv_get_device_name(id->verbs->device));
    std::fflush(stdout);
    for (int i = 0; i < 200; ++i) {  // at most ~20 s
        pollfd p{ch->fd, POLLIN, 0};
        if (poll(&p, 1, 100) != 1) continue;
        rdma_cm_event *ev;
        if (rdma_get_cm_event(ch, &ev)) return 6;
        const rdma_cm_event_type t = ev->event;
        std::printf("EVENT %s %d\n", rdma_event_str(t), ev->status);
        std::fflush(stdout);
        rdma_ack_cm_event(ev);
        if (t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            rdma_destroy_id(id);
            rdma_destroy_event_channel(ch);
            return 0;
        }
    }
    return 7;
}
