#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem

/// The portable backend: `poll(2)`, on Linux (`LIVELIST_EVENT_LOOP=poll`) and on every other system.
///
/// Bookkeeping is O(1) per operation: the watched descriptors sit densely in one `pollfd` array
/// (with their tokens and interests beside it), and `slots[fd]` gives each descriptor's position;
/// removing one moves the last entry into its place. The `poll()` call itself is O(n) in the
/// descriptors watched, by nature, which is why epoll stays the default on Linux; after it, one pass
/// copies the ready entries into the events buffer, so the loop may register and remove descriptors
/// while it handles them.
///
/// Where poll has no POLLRDHUP (Darwin), `peerClosed` asked for alone is watched as input: when input
/// arrives, a one-byte `MSG_PEEK` tells an end (reported as `peerClosed`) from data (which the
/// loop does not want now; the descriptor is then watched for errors only until its interest
/// changes, so that level-triggered input cannot spin the loop).
final class PollPoller: Poller {
    private var entries: UnsafeMutablePointer<pollfd>
    private var tokens: UnsafeMutablePointer<UInt64>
    /// The interest asked for, per entry (what `entries[i].events` is made from).
    private var interests: UnsafeMutablePointer<IOEvents>
    private var capacity: Int
    private(set) var count = 0
    /// Position of each descriptor in `entries`, -1 when not watched; indexed by descriptor.
    private var slots: [Int32] = []
    /// The events buffer: what the last `wait` found ready.
    private var readyTokens: UnsafeMutablePointer<UInt64>
    private var readyEvents: UnsafeMutablePointer<IOEvents>
    private var readyCount = 0
    private let wakeChannel: WakeChannel
    private var closed = false
    /// Whether this system's poll has POLLRDHUP (Linux).
    static let systemHasPeerClosed = CS_POLLRDHUP != 0
    /// Whether `peerClosed` is emulated by peeking (no POLLRDHUP here, or forced by a test).
    let emulatesPeerClosed: Bool

    init(emulatingPeerClosed: Bool = !PollPoller.systemHasPeerClosed) throws(HTTPServerError) {
        emulatesPeerClosed = emulatingPeerClosed
        wakeChannel = try WakeChannel()
        capacity = 64
        entries = .allocate(capacity: capacity)
        tokens = .allocate(capacity: capacity)
        interests = .allocate(capacity: capacity)
        readyTokens = .allocate(capacity: capacity)
        readyEvents = .allocate(capacity: capacity)
        _ = register(wakeChannel.readFd, interest: .readable, token: Self.wakeToken)
    }

    deinit {
        close()
        entries.deallocate()
        tokens.deallocate()
        interests.deallocate()
        readyTokens.deallocate()
        readyEvents.deallocate()
    }

    // MARK: - Registration

    func register(_ fd: Int32, interest: IOEvents, token: UInt64) -> Bool {
        guard fd >= 0 else {
            errno = EBADF
            return false
        }
        let index = Int(fd)
        if index >= slots.count {
            slots.append(contentsOf: repeatElement(-1, count: max(index + 1 - slots.count, slots.count)))
        }
        guard slots[index] < 0 else {
            errno = EEXIST
            return false
        }
        if count == capacity { grow() }
        entries[count] = pollfd(fd: fd, events: pollEvents(interest), revents: 0)
        tokens[count] = token
        interests[count] = interest
        slots[index] = Int32(count)
        count += 1
        return true
    }

    func modify(_ fd: Int32, interest: IOEvents, token: UInt64) {
        guard let slot = slot(of: fd) else { return }
        entries[slot].events = pollEvents(interest)
        tokens[slot] = token
        interests[slot] = interest
    }

    func unregister(_ fd: Int32) {
        guard let slot = slot(of: fd) else { return }
        let last = count - 1
        if slot != last {
            entries[slot] = entries[last]
            tokens[slot] = tokens[last]
            interests[slot] = interests[last]
            slots[Int(entries[slot].fd)] = Int32(slot)
        }
        slots[Int(fd)] = -1
        count = last
    }

    func forgetClosed(_ fd: Int32) { unregister(fd) }

    private func slot(of fd: Int32) -> Int? {
        guard fd >= 0, Int(fd) < slots.count else { return nil }
        let slot = slots[Int(fd)]
        return slot >= 0 ? Int(slot) : nil
    }

    private func grow() {
        let larger = capacity * 2
        func moved<T>(_ old: UnsafeMutablePointer<T>, keeping kept: Int) -> UnsafeMutablePointer<T> {
            let new = UnsafeMutablePointer<T>.allocate(capacity: larger)
            new.moveInitialize(from: old, count: kept)
            old.deallocate()
            return new
        }
        entries = moved(entries, keeping: count)
        tokens = moved(tokens, keeping: count)
        interests = moved(interests, keeping: count)
        // The loop may still be reading the ready events (it accepts while handling them).
        readyTokens = moved(readyTokens, keeping: readyCount)
        readyEvents = moved(readyEvents, keeping: readyCount)
        capacity = larger
    }

    /// The `pollfd.events` for an interest.
    @inline(__always)
    private func pollEvents(_ interest: IOEvents) -> Int16 {
        var events: Int32 = 0
        if interest.contains(.readable) { events |= Int32(POLLIN) }
        if interest.contains(.writable) { events |= Int32(POLLOUT) }
        if interest.contains(.peerClosed) {
            events |= emulatesPeerClosed ? Int32(POLLIN) : Int32(CS_POLLRDHUP)
        }
        return Int16(truncatingIfNeeded: events)
    }

    // MARK: - Waiting

    func wait(timeoutMilliseconds: Int32) -> Int {
        readyCount = 0
        let found = poll(entries, nfds_t(count), timeoutMilliseconds)
        guard found > 0 else { return 0 }
        var ready = 0
        var index = 0
        // `found` entries have revents set: stop once they are all seen.
        var remaining = Int(found)
        while index < count, remaining > 0 {
            let revents = Int32(entries[index].revents)
            if revents != 0 {
                remaining -= 1
                let events = translate(revents, at: index)
                if !events.isEmpty {
                    readyTokens[ready] = tokens[index]
                    readyEvents[ready] = events
                    ready += 1
                }
            }
            index += 1
        }
        readyCount = ready
        return ready
    }

    @inline(__always)
    func token(at index: Int) -> UInt64 { readyTokens[index] }

    @inline(__always)
    func events(at index: Int) -> IOEvents { readyEvents[index] }

    /// The events of entry `index` from its `revents`, limited (as epoll does) to its interest
    /// plus errors and hangups.
    private func translate(_ revents: Int32, at index: Int) -> IOEvents {
        let interest = interests[index]
        var events: IOEvents = []
        if revents & Int32(POLLERR) != 0 { events.insert(.error) }
        if revents & Int32(POLLHUP) != 0 { events.insert(.hangup) }
        // A descriptor closed without being forgotten: report it as broken, never poll it again.
        if revents & Int32(POLLNVAL) != 0 { events.formUnion([.error, .hangup]) }
        if revents & Int32(POLLOUT) != 0, interest.contains(.writable) { events.insert(.writable) }
        if revents & Int32(POLLIN) != 0 {
            if interest.contains(.readable) {
                events.insert(.readable)
            } else if interest.contains(.peerClosed) && emulatesPeerClosed {
                events.formUnion(peekForEnd(at: index))
            }
        }
        if CS_POLLRDHUP != 0, revents & Int32(CS_POLLRDHUP) != 0, interest.contains(.peerClosed) {
            events.insert(.peerClosed)
        }
        return events
    }

    /// For `peerClosed` without POLLRDHUP: an end of input is the peer's end; data stops the
    /// input watch until the interest changes.
    private func peekForEnd(at index: Int) -> IOEvents {
        var byte: UInt8 = 0
        let peeked = recv(entries[index].fd, &byte, 1, Int32(MSG_PEEK))
        if peeked == 0 { return .peerClosed }
        if peeked > 0 {
            entries[index].events &= ~Int16(truncatingIfNeeded: Int32(POLLIN))
            return []
        }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return [] }
        return .error
    }

    // MARK: - Wake-ups

    func wake() { wakeChannel.signal() }

    func drainWake() { wakeChannel.drain() }

    var wakeDescriptor: Int32 { wakeChannel.writeFd }

    func close() {
        guard !closed else { return }
        closed = true
        wakeChannel.close()
    }

    // MARK: - For tests

    /// Checks that the slot map and the entries agree (for tests): every entry's descriptor maps
    /// to its position and no other descriptor maps anywhere.
    func bookkeepingIsConsistent() -> Bool {
        var mapped = 0
        for (fd, slot) in slots.enumerated() where slot >= 0 {
            mapped += 1
            guard Int(slot) < count, entries[Int(slot)].fd == Int32(fd) else { return false }
        }
        return mapped == count
    }

    /// The token and interest registered for `fd` (for tests).
    func registration(of fd: Int32) -> (token: UInt64, interest: IOEvents)? {
        guard let slot = slot(of: fd) else { return nil }
        return (tokens[slot], interests[slot])
    }
}
