// Thin shims over the Linux system calls that the Glibc module does not export
// (epoll, eventfd, accept4, sendmsg with MSG_NOSIGNAL). Used by HTTPServer only.
#ifndef CSYSTEM_H
#define CSYSTEM_H

// Only fixed-width types appear here, so that this module's view of the C library never
// conflicts with the Glibc module's (the implementation includes the system headers).
#include <stdint.h>
#include <stddef.h>

static const uint32_t CS_EPOLLIN = 0x001;
static const uint32_t CS_EPOLLOUT = 0x004;
static const uint32_t CS_EPOLLERR = 0x008;
static const uint32_t CS_EPOLLHUP = 0x010;
static const uint32_t CS_EPOLLRDHUP = 0x2000;
static const uint32_t CS_EPOLLEXCLUSIVE = 1u << 28;
static const int CS_EPOLL_CTL_ADD = 1;
static const int CS_EPOLL_CTL_DEL = 2;
static const int CS_EPOLL_CTL_MOD = 3;

/// Creates an epoll instance (close-on-exec). Returns -1 and sets errno on failure.
int cs_epoll_create(void);
/// Adds (op 1), modifies (op 3) or deletes (op 2) `fd` with the given event mask and user data.
int cs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Allocates room for `count` epoll events (free with cs_epoll_events_free).
void *cs_epoll_events_alloc(int count);
void cs_epoll_events_free(void *events);
/// Waits for events; returns their number, 0 on timeout, -1 with errno (EINTR is common).
int cs_epoll_wait(int epfd, void *events, int count, int timeout_ms);
/// The user data and the event mask of event `index` (the struct is packed on x86_64).
uint64_t cs_epoll_event_data(const void *events, int index);
uint32_t cs_epoll_event_flags(const void *events, int index);

/// A non-blocking, close-on-exec eventfd used to wake a loop.
int cs_eventfd(void);
int cs_eventfd_signal(int fd);
void cs_eventfd_drain(int fd);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC. Fills `address` (up to `length` bytes).
int cs_accept(int fd, void *address, uint32_t *length);
/// One sendmsg of `count` buffers (`struct iovec`) with MSG_NOSIGNAL (never raises SIGPIPE).
long cs_sendv(int fd, const void *iov, int count);
/// send with MSG_NOSIGNAL.
long cs_send(int fd, const void *bytes, size_t length);
/// Sets TCP_NODELAY.
int cs_set_nodelay(int fd);
/// Sets SO_REUSEADDR.
int cs_set_reuseaddr(int fd);
/// Ignores SIGPIPE process-wide.
void cs_ignore_sigpipe(void);
/// Creates a detached thread running `body(context)`; returns 0 on success.
int cs_thread_start(void *(*body)(void *), void *context);
/// Installs a handler for `signo` that writes to a shared blocking eventfd, returned.
int cs_signal_watch(int signo);
/// Blocks until one of the watched signals arrives.
void cs_signal_wait(int fd);
/// A per-thread pointer (the event loop running on this thread, if any).
void cs_set_thread_context(void *context);
void *cs_thread_context(void);

#endif
