#define _GNU_SOURCE
#include "csystem.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cs_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

void *cs_epoll_events_alloc(int count) { return calloc((size_t)count, sizeof(struct epoll_event)); }
void cs_epoll_events_free(void *events) { free(events); }

int cs_epoll_wait(int epfd, void *events, int count, int timeout_ms) {
    return epoll_wait(epfd, (struct epoll_event *)events, count, timeout_ms);
}

uint64_t cs_epoll_event_data(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].data.u64;
}

uint32_t cs_epoll_event_flags(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].events;
}

int cs_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int cs_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof(one));
}

void cs_eventfd_drain(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof(value)) > 0) {}
}

int cs_accept(int fd, void *address, uint32_t *length) {
    return accept4(fd, (struct sockaddr *)address, (socklen_t *)length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

long cs_sendv(int fd, const void *iov, int count) {
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_iov = (struct iovec *)iov;
    message.msg_iovlen = (size_t)count;
    return sendmsg(fd, &message, MSG_NOSIGNAL);
}

long cs_send(int fd, const void *bytes, size_t length) { return send(fd, bytes, length, MSG_NOSIGNAL); }

int cs_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int cs_set_reuseaddr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

void cs_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int cs_thread_start(void *(*body)(void *), void *context) {
    pthread_t handle;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int result = pthread_create(&handle, &attributes, body, context);
    pthread_attr_destroy(&attributes);
    return result;
}

static int signal_event_fd = -1;

static void on_watched_signal(int signo) {
    (void)signo;
    uint64_t one = 1;
    int saved = errno;
    if (write(signal_event_fd, &one, sizeof(one)) < 0) {}
    errno = saved;
}

int cs_signal_watch(int signo) {
    if (signal_event_fd < 0) { signal_event_fd = eventfd(0, EFD_CLOEXEC); }
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_watched_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(signo, &action, NULL);
    return signal_event_fd;
}

void cs_signal_wait(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof(value)) < 0 && errno == EINTR) {}
}

static __thread void *thread_context = NULL;

void cs_set_thread_context(void *context) { thread_context = context; }

void *cs_thread_context(void) { return thread_context; }
